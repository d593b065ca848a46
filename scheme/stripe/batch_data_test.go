package stripe

import (
	"bytes"
	"fmt"
	"testing"
)

// batchOf encodes objects of keys at version v with values of size n.
func batchOf(keys []string, v uint64, n int) []batchObject {
	objs := make([]batchObject, len(keys))
	for i, k := range keys {
		objs[i] = newBatchObject(&Object{Key: []byte(k), Value: bytes.Repeat([]byte{byte(v)}, n), Version: v})
	}
	return objs
}

// addBatch packs objs into b's stripes and commits every object,
// returning the slots.
func addBatch(t *testing.T, b *BatchData, objs []batchObject, chunk int) []uint32 {
	t.Helper()
	stripes, err := packBatch(objs, orderByHeat(objs), b.k, chunk)
	if err != nil {
		t.Fatal(err)
	}
	var slots []uint32
	for _, ps := range stripes {
		slot, err := b.Add(1, b.NextSerial(1), ps, 0)
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, slot)
		for _, p := range ps.places {
			if _, _, err := b.Commit(objs[p.object].key, BatchLoc{Slot: slot, Chunk: p.chunk, Offset: p.offset}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return slots
}

func keysN(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s:%d", prefix, i)
	}
	return keys
}

// TestBatchDataKeepsChunkZeroAndHeads: under stripe@batch the coordinator
// keeps chunk 0 whole and only the heads of the other chunks, and still
// finds every key and its metadata; under hybrid@batch it keeps all.
func TestBatchDataKeepsChunkZeroAndHeads(t *testing.T) {
	for _, keepAll := range []bool{false, true} {
		b := NewBatchData(4, keepAll)
		keys := keysN("k", 300)
		addBatch(t, b, batchOf(keys, 7, 100), 1024)
		locals := 0
		for _, k := range keys {
			o, loc, local, ok := b.Get([]byte(k))
			if !ok || string(o.Key) != k || o.Version != 7 {
				t.Fatalf("keepAll %v: Get %s = %v %v", keepAll, k, o, ok)
			}
			if local != (keepAll || loc.Chunk == 0) {
				t.Fatalf("keepAll %v: %s in chunk %d local %v", keepAll, k, loc.Chunk, local)
			}
			if local {
				locals++
				if len(o.Value) != 100 {
					t.Fatalf("%s: value of %d bytes", k, len(o.Value))
				}
			} else if o.Value != nil {
				t.Fatalf("%s: a head with a value", k)
			}
		}
		st := b.Stats()
		if st.Keys != 300 || st.ValueBytes != 300*100 || st.GarbageObjects != 0 || st.GarbageRatio() != 0 {
			t.Errorf("keepAll %v: stats %+v", keepAll, st)
		}
		if !keepAll && (locals < 60 || locals > 90 || st.KeptBytes*3 > st.DataBytes) {
			t.Errorf("stripe@batch keeps %d of 300 objects, %d of %d bytes", locals, st.KeptBytes, st.DataBytes)
		}
		if _, ok := b.Locate([]byte("absent")); ok {
			t.Error("found an absent key")
		}
	}
}

// TestBatchDataGarbageAndVictims: overwrites leave garbage in the old
// stripes (BCStore §III-B's invalid blocks), the victims are the stripes
// with the fewest live objects, and a stripe frees only once empty.
func TestBatchDataGarbageAndVictims(t *testing.T) {
	b := NewBatchData(2, false)
	keys := keysN("k", 40)
	slots := addBatch(t, b, batchOf(keys, 1, 60), 256) // several stripes
	if len(slots) < 3 {
		t.Fatalf("%d stripes", len(slots))
	}
	// Overwrite every key of the first stripe and one of the second.
	var first, second []string
	for _, k := range keys {
		loc, _ := b.Locate([]byte(k))
		switch loc.Slot {
		case slots[0]:
			first = append(first, k)
		case slots[1]:
			second = append(second, k)
		}
	}
	addBatch(t, b, batchOf(append(first, second[0]), 2, 60), 256)
	v := b.Victims(10)
	if len(v) != 2 || v[0] != slots[0] || v[1] != slots[1] {
		t.Fatalf("victims %v, want %d then %d", v, slots[0], slots[1])
	}
	if r := b.Stats().GarbageRatio(); r <= 0 || r >= 0.5 {
		t.Errorf("garbage ratio %.2f", r)
	}
	if _, err := b.Free(slots[1]); err == nil {
		t.Error("freed a stripe with live objects")
	}
	var moved int
	b.LiveIn(slots[1], func(BatchLoc, Object, bool) { moved++ })
	if moved != len(second)-1 {
		t.Errorf("%d live objects in the second stripe, want %d", moved, len(second)-1)
	}
	before := b.Stats()
	serial, err := b.Free(slots[0])
	if err != nil || serial != 1 {
		t.Fatalf("free: serial %d, %v", serial, err)
	}
	after := b.Stats()
	if after.Stripes != before.Stripes-1 || after.LiveBytes != before.LiveBytes || after.DataBytes >= before.DataBytes {
		t.Errorf("free: %+v → %+v", before, after)
	}
	// An older version never replaces a newer one; a deletion of an
	// older version leaves the newer.
	stale := batchOf([]string{second[0]}, 1, 60)
	addBatch(t, b, stale, 256)
	if o, _, _, _ := b.Get([]byte(second[0])); o.Version != 2 {
		t.Errorf("%s at version %d after a stale commit", second[0], o.Version)
	}
	if _, ok, _ := b.Delete([]byte(second[0]), 1); ok {
		t.Error("deleted a newer version")
	}
	if _, ok, _ := b.Delete([]byte(second[0]), 2); !ok {
		t.Error("did not delete")
	}
	if _, ok := b.Locate([]byte(second[0])); ok {
		t.Error("deleted key still found")
	}
	if st := b.Stats(); st.Keys != 39 || st.ValueBytes != 39*60 {
		t.Errorf("after the deletion: %+v", st)
	}
}
