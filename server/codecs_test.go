package server

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/memgest/memgest/server/core"
)

func TestHeartbeatRoundTrips(t *testing.T) {
	for _, h := range []heartbeatReq{{ID: "n1", Incarnation: 7, Fresh: true}, {ID: "n2", Incarnation: 1 << 62, Restarted: true}} {
		if got, err := decodeHeartbeat(h.encode(nil)); err != nil || got != h {
			t.Fatalf("heartbeat: %+v, %v; want %+v", got, err, h)
		}
	}
}

func TestDirectoryCodec(t *testing.T) {
	in := []core.DirEntry{
		{Key: []byte("a"), Scheme: 4, Version: 9, ExpireAt: 123},
		{Key: []byte("b"), Version: 10, Kind: core.DirTombstone},
		{Key: []byte("c"), Version: 11, Kind: core.DirPurge},
	}
	b := core.EncodeDirectory(in)
	got, err := core.DecodeDirectory(b)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("directory round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := core.DecodeDirectory(b[:i]); err == nil {
			t.Fatalf("a directory message cut at byte %d decoded", i)
		}
	}
	if _, err := core.DecodeDirectory(append(b, 0)); err == nil {
		t.Fatal("a directory message with a trailing byte decoded")
	}
}

// FuzzPeerPayloads: no decoder panics on arbitrary bytes, and whatever
// decodes re-encodes to the same bytes.
func FuzzPeerPayloads(f *testing.F) {
	f.Add(core.EncodeDirectory([]core.DirEntry{{Key: []byte("d"), Scheme: 2, Version: 3}, {Key: []byte("t"), Version: 4, Kind: core.DirTombstone}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := core.DecodeDirectory(b); err == nil && !bytes.Equal(core.EncodeDirectory(d), b) {
			t.Fatal("Directory does not re-encode")
		}
		_, _, _ = core.ParsePieceKey(b)
		_, _ = decodeHeartbeat(b)
	})
}
