package commands

import (
	"bytes"
	"testing"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// A Tx request round-trips, a large argument sent from the frame's tail
// included, and so does WATCH's answer.
func TestTxRoundTrips(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 100<<10)
	w := &watchSet{slot: 7, node: "n1", boot: 9, mark: 3, broken: true,
		keys: []watchedKey{{key: []byte("a{t}"), exists: true, version: 42}, {key: []byte("b{t}")}}}
	req := txReq{kind: txExec, proto: 3, slot: 7, watch: w,
		cmds: [][][]byte{{[]byte("SET"), []byte("a{t}"), big}, {[]byte("PING")}}}
	payload, tail := req.spool()
	got, err := decodeTx(core.PeerReq{Payload: payload, Tail: tail}.Whole())
	if err != nil || got.kind != txExec || got.proto != 3 || got.slot != 7 || len(got.cmds) != 2 ||
		!bytes.Equal(got.cmds[0][2], big) || string(got.cmds[1][0]) != "PING" {
		t.Fatalf("exec: %+v, %v", got, err)
	}
	if g := got.watch; g == nil || g.node != "n1" || g.boot != 9 || g.mark != 3 || !g.broken || len(g.keys) != 2 ||
		string(g.keys[0].key) != "a{t}" || !g.keys[0].exists || g.keys[0].version != 42 || g.keys[1].exists {
		t.Fatalf("watch set: %+v", got.watch)
	}
	payload, _ = txReq{kind: txWatch, proto: 2, slot: 7, keys: [][]byte{[]byte("a{t}")}}.spool()
	if got, err := decodeTx(payload); err != nil || got.kind != txWatch || len(got.keys) != 1 || string(got.keys[0]) != "a{t}" {
		t.Fatalf("watch: %+v, %v", got, err)
	}
	keys := [][]byte{[]byte("a{t}"), []byte("b{t}")}
	ws, r, err := decodeWatch(encodeWatch(*w, resp.OK()), 7, keys)
	if err != nil || !r.Equal(resp.OK()) || ws.node != "n1" || ws.mark != 3 || len(ws.keys) != 2 || ws.keys[0].version != 42 {
		t.Fatalf("watch answer: %+v %v %v", ws, r, err)
	}
	if _, r, err := decodeWatch(encodeWatch(watchSet{}, resp.Err("TRYAGAIN x")), 7, keys); err != nil || r.Text() != "TRYAGAIN x" {
		t.Fatalf("watch error: %v %v", r, err)
	}
	if _, err := decodeTx([]byte{9, 2, 0, 7}); err == nil {
		t.Fatal("an unknown kind decoded")
	}
}
