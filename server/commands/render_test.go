package commands

import (
	"bytes"
	"testing"

	"github.com/memgest/memgest/server/resp"
)

// A pipeline's replies written with writev, large bulk strings from where
// they are, are the bytes AppendTo gives, in order.
func TestRenderRepliesWritesLargeBulkStringsInPlace(t *testing.T) {
	big := bytes.Repeat([]byte("v"), inlineReply+1)
	replies := []resp.Reply{resp.OK(), resp.BulkOwned(big), resp.Int(7), resp.BulkOwned(big), resp.BulkString("small")}
	protos := []int{2, 3, 2, 2, 3}
	var want []byte
	for i, r := range replies {
		want = r.AppendTo(want, protos[i])
	}
	buf, large := renderReplies(nil, replies, protos)
	if large == nil {
		t.Fatal("no segments for replies with large bulk strings")
	}
	referenced := 0
	for _, seg := range large {
		if len(seg) > 0 && &seg[0] == &big[0] {
			referenced++
		}
	}
	if got := bytes.Join(large, nil); !bytes.Equal(got, want) || referenced != 2 {
		t.Fatalf("segments differ from AppendTo (%d vs %d bytes), %d of 2 large strings referenced", len(got), len(want), referenced)
	}
	if buf, large := renderReplies(buf[:0], replies[4:], protos[4:]); large != nil || string(buf) != "$5\r\nsmall\r\n" {
		t.Fatalf("small replies: %q, segments %v", buf, large != nil)
	}
}
