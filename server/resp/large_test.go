package resp

import (
	"bytes"
	"testing"

	"github.com/memgest/memgest/internal/bigcopy"
)

// A huge value goes out without a copy: BulkOwned keeps the bytes it is
// given, AppendHead leaves a large bulk string's bytes for the caller to
// write after the header, and ParseOwned keeps the buffer's bytes; the
// wire form is the same as AppendTo's.
func TestLargeBulkStringsAreNotCopied(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), bigcopy.Step/4) // over bigcopy.Step
	r := BulkOwned(big)
	if got := stringBytes(r.str); &got[0] != &big[0] {
		t.Fatal("BulkOwned copied its bytes")
	}
	if got := stringBytes(Bulk(big).str); &got[0] == &big[0] || !bytes.Equal(got, big) {
		t.Fatal("Bulk must copy, and copy every byte")
	}
	for _, proto := range []int{2, 3} {
		whole := r.AppendTo([]byte("+OK\r\n"), proto)
		head, body := r.AppendHead([]byte("+OK\r\n"), proto, 1024)
		if body == nil || &body[0] != &big[0] {
			t.Fatal("AppendHead copied a large bulk string")
		}
		if got := append(append(head, body...), BulkEnd...); !bytes.Equal(got, whole) {
			t.Fatalf("RESP%d: head, body and BulkEnd differ from AppendTo", proto)
		}
		small, body := BulkString("abc").AppendHead(nil, proto, 1024)
		if body != nil || string(small) != "$3\r\nabc\r\n" {
			t.Fatalf("a small bulk string: %q, body %v", small, body != nil)
		}
		parsed, n, err := ParseOwned(whole[5:])
		if err != nil || n != len(whole)-5 || !parsed.Equal(r) {
			t.Fatalf("ParseOwned: %v, %d bytes", err, n)
		}
		if got := stringBytes(parsed.str); &got[0] != &whole[5+len(head)-len("+OK\r\n")] {
			t.Fatal("ParseOwned copied the bulk string")
		}
	}
}
