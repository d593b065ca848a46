package commands

import (
	"bytes"
	"errors"
	"testing"
)

// joined is a spooled frame's bytes as its receiver gets them.
func joined(payload []byte, tail [][]byte) []byte {
	return bytes.Join(append([][]byte{payload}, tail...), nil)
}

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

// TestMigrateBatchRoundTrips: a move's batch and its answer decode to
// what was sent, values spooled by reference included; an empty or
// oversized batch, a key too long or missing, and an answer for another
// count of keys are refused.
func TestMigrateBatchRoundTrips(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 5000) // spooled, not copied
	b := migrateBatch{From: "n1", Epoch: 9, Keys: []migrateKey{
		{Key: []byte("a"), Scheme: 3, ExpireAt: 1234, Version: 7, Value: big},
		{Key: []byte("b"), Lost: true},
		{Key: []byte("c"), Drop: true},
	}}
	payload, tail := b.spool()
	got, err := decodeMigrate(joined(payload, tail))
	if err != nil || got.From != "n1" || got.Epoch != 9 || len(got.Keys) != 3 {
		t.Fatalf("batch: %+v, %v", got, err)
	}
	if k := got.Keys[0]; string(k.Key) != "a" || k.Scheme != 3 || k.ExpireAt != 1234 || k.Version != 7 || !bytes.Equal(k.Value, big) || k.Lost || k.Drop {
		t.Fatalf("first key: %+v", k)
	}
	if !got.Keys[1].Lost || !got.Keys[2].Drop || len(got.Keys[2].Value) != 0 {
		t.Fatalf("flags: %+v", got.Keys[1:])
	}
	for name, bad := range map[string]migrateBatch{
		"empty":    {From: "n1"},
		"no key":   {From: "n1", Keys: []migrateKey{{}}},
		"long key": {From: "n1", Keys: []migrateKey{{Key: make([]byte, MaxKeySize+1)}}},
		"too many": {From: "n1", Keys: make([]migrateKey, maxMoveBatch+1)},
	} {
		p, tl := bad.spool()
		if _, err := decodeMigrate(joined(p, tl)); err == nil {
			t.Errorf("%s batch decoded", name)
		}
	}
	answer := encodeMigrateResp([]error{nil, errors.New("refused")})
	errs, err := decodeMigrateResp(answer, 2)
	if err != nil || errs[0] != nil || errs[1] == nil || errs[1].Error() != "refused" {
		t.Fatalf("answer: %v, %v", errs, err)
	}
	if _, err := decodeMigrateResp(answer, 3); err == nil {
		t.Fatal("an answer for 2 keys read as one for 3")
	}
}

// FuzzCommandPayloads: the forward, scan, publish, Tx and move decoders
// never panic on arbitrary bytes.
func FuzzCommandPayloads(f *testing.F) {
	f.Add([]byte(forwardReq{Proto: 2, Args: [][]byte{[]byte("GET"), []byte("k")}}.encode(nil)))
	publish, _ := encodePublish([]busMsg{{[]byte("ch"), []byte("msg")}})
	f.Add(publish)
	tx, _ := txReq{kind: txExec, proto: 2, slot: 1, watch: &watchSet{keys: []watchedKey{{key: []byte("k")}}},
		cmds: [][][]byte{{[]byte("GET"), []byte("k")}}}.spool()
	f.Add(tx)
	move, _ := migrateBatch{From: "n1", Keys: []migrateKey{{Key: []byte("k"), Value: []byte("v")}}}.spool()
	f.Add(move)
	f.Add([]byte(encodeMigrateResp([]error{nil})))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeMigrate(b)
		_, _ = decodeMigrateResp(b, 1)
		_, _ = decodePublish(b)
		_, _ = decodeTx(b)
		_, _, _ = decodeWatch(b, 0, [][]byte{[]byte("k")})
		_, _ = decodeForward(b)
		_, _ = decodeScan(b)
		_, _ = decodeScanResp(b)
	})
}
