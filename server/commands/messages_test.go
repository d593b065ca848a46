package commands

import "testing"

func TestForwardAndScanRoundTrips(t *testing.T) {
	f := forwardReq{Proto: 3, Args: [][]byte{[]byte("SET"), []byte("k"), {}}}
	if got, err := decodeForward(f.encode(nil)); err != nil || got.Proto != 3 || len(got.Args) != 3 || string(got.Args[0]) != "SET" {
		t.Fatalf("forward: %+v, %v", got, err)
	}
	s := scanResp{Next: 42, Keys: [][]byte{[]byte("a"), []byte("b")}}
	if got, err := decodeScanResp(s.encode(nil)); err != nil || got.Next != 42 || len(got.Keys) != 2 {
		t.Fatalf("scan: %+v, %v", got, err)
	}
}

// FuzzCommandPayloads: the forward, scan, publish and Tx decoders never
// panic on arbitrary bytes.
func FuzzCommandPayloads(f *testing.F) {
	f.Add([]byte(forwardReq{Proto: 2, Args: [][]byte{[]byte("GET"), []byte("k")}}.encode(nil)))
	publish, _ := encodePublish([]busMsg{{[]byte("ch"), []byte("msg")}})
	f.Add(publish)
	tx, _ := txReq{kind: txExec, proto: 2, slot: 1, watch: &watchSet{keys: []watchedKey{{key: []byte("k")}}},
		cmds: [][][]byte{{[]byte("GET"), []byte("k")}}}.spool()
	f.Add(tx)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodePublish(b)
		_, _ = decodeTx(b)
		_, _, _ = decodeWatch(b, 0, [][]byte{[]byte("k")})
		_, _ = decodeForward(b)
		_, _ = decodeScan(b)
		_, _ = decodeScanResp(b)
	})
}
