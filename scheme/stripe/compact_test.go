package stripe

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// putAll appends and commits objects key0..key(n-1) at version v with
// value size bytes (and expiry exp), one slot, and returns the store.
func putAll(t *testing.T, d *Data, n, size int, v uint64, exp int64) {
	t.Helper()
	for i := range n {
		o := Object{Key: fmt.Appendf(nil, "key%03d", i), Value: make([]byte, size), Version: v, ExpireAt: exp}
		o.Value[0] = byte(i + 1)
		loc, _, err := d.Append(&o)
		must(t, err)
		if ok, _, _, err := d.Commit(o.Key, loc); !ok || err != nil {
			t.Fatalf("commit %s: %v %v", o.Key, ok, err)
		}
	}
}

// TestVictimsAndResidents: compaction's choice is the sealed chunks with
// the most garbage, and a victim's residents are exactly its objects the
// index still places there.
func TestVictimsAndResidents(t *testing.T) {
	d, err := NewData(256)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	putAll(t, d, 40, 20, 1, 0) // about 30 B each: 8 per chunk, 5 chunks
	if v := d.Victims(3); len(v) != 0 {
		t.Fatalf("victims with no garbage: %+v", v)
	}
	// Delete 1 object of chunk 0, 3 of chunk 1, 2 of chunk 2 (rewrite one
	// of them: a rewrite leaves garbage as a deletion does).
	locs := map[ChunkID][]string{}
	for i := range 40 {
		key := fmt.Sprintf("key%03d", i)
		id, _, ok := d.Locate([]byte(key))
		if !ok {
			t.Fatalf("%s not found", key)
		}
		locs[id] = append(locs[id], key)
	}
	ids := []ChunkID{}
	for s := uint32(0); s < 3; s++ {
		ids = append(ids, ChunkID{List: 0, Position: 0, Stripe: s})
	}
	gone := map[string]bool{}
	del := func(key string) {
		ok, _, err := d.Delete([]byte(key), 1)
		if !ok || err != nil {
			t.Fatalf("delete %s: %v %v", key, ok, err)
		}
		gone[key] = true
	}
	del(locs[ids[0]][0])
	for _, k := range locs[ids[1]][:3] {
		del(k)
	}
	del(locs[ids[2]][0])
	o := Object{Key: []byte(locs[ids[2]][1]), Value: []byte("new"), Version: 2}
	loc, _, err := d.Append(&o)
	must(t, err)
	if ok, _, _, err := d.Commit(o.Key, loc); !ok || err != nil {
		t.Fatalf("rewrite: %v %v", ok, err)
	}
	gone[string(o.Key)] = true
	v := d.Victims(2)
	if len(v) != 2 || v[0].ID != ids[1] || v[1].ID != ids[2] || v[0].Garbage <= v[1].Garbage {
		t.Fatalf("victims %+v, want %s then %s", v, ids[1], ids[2])
	}
	if all := d.Victims(10); len(all) != 3 || all[2].ID != ids[0] {
		t.Fatalf("every chunk with garbage: %+v", all)
	}
	for _, id := range ids {
		res := d.Residents(id)
		want := 0
		for _, k := range locs[id] {
			if !gone[k] {
				want++
			}
		}
		if len(res) != want {
			t.Fatalf("%s: %d residents, want %d", id, len(res), want)
		}
		for _, r := range res {
			if gone[string(r.Key)] || r.Version != 1 {
				t.Fatalf("%s: resident %s", id, r)
			}
			cur, _ := d.Get(r.Key)
			if string(cur.Value) != string(r.Value) {
				t.Fatalf("%s: resident %s differs from the current object", id, r.Key)
			}
		}
	}
	if res := d.Residents(ChunkID{List: 9}); res != nil {
		t.Fatalf("residents of an unknown chunk: %v", res)
	}
}

// TestRetiredListEvacuates: once a list leaves the data positions new
// chunks open at (its shard retired), its open chunk is closed, no object
// is appended there again, Evacuees names its chunks while they hold
// objects, and relocating them frees every chunk of the list, so that
// Lists stops naming it.
func TestRetiredListEvacuates(t *testing.T) {
	d, err := NewData(256)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}, {List: 1, Position: 0}})
	putAll(t, d, 20, 20, 1, 0)
	if got := d.Lists(); !slices.Equal(got, []uint16{0, 1}) {
		t.Fatalf("lists %v, want [0 1]", got)
	}
	closed := d.SetSlots([]Slot{{List: 1, Position: 0}}) // list 0's shard retired
	if !slices.ContainsFunc(closed, func(u Update) bool { return u.Kind == Seal && u.Chunk.List == 0 }) {
		t.Fatalf("retiring list 0 closed %v, want its open chunk sealed", closed)
	}
	evacuees := d.Evacuees([]uint16{0}, 100)
	if len(evacuees) == 0 {
		t.Fatal("no evacuees in list 0, which holds objects")
	}
	for _, e := range evacuees {
		if e.ID.List != 0 || e.Live == 0 {
			t.Fatalf("evacuee %+v: want list 0's chunks with objects", e)
		}
		for _, o := range d.Residents(e.ID) {
			o.Version++
			loc, _, err := d.Append(&o)
			must(t, err)
			if ok, _, _, err := d.Commit(o.Key, loc); !ok || err != nil {
				t.Fatalf("relocating %s: %v %v", o.Key, ok, err)
			}
			if id, _, ok := d.Locate(o.Key); !ok || id.List != 1 {
				t.Fatalf("%s relocated to %v, want list 1", o.Key, id)
			}
		}
	}
	if left := d.Evacuees([]uint16{0}, 100); len(left) != 0 {
		t.Fatalf("list 0 still holds objects after relocation: %+v", left)
	}
	if got := d.Lists(); !slices.Equal(got, []uint16{1}) {
		t.Fatalf("lists %v after the evacuation, want [1]: list 0's chunks should be freed", got)
	}
	for i := range 20 {
		key := fmt.Appendf(nil, "key%03d", i)
		if o, ok := d.Get(key); !ok || o.Value[0] != byte(i+1) {
			t.Fatalf("%s after the evacuation: %v %v", key, o, ok)
		}
	}
}

// TestSampleExpired: a sample of every chunk finds exactly the expired
// current objects.
func TestSampleExpired(t *testing.T) {
	d, err := NewData(256)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	putAll(t, d, 20, 10, 1, 1000)
	more := Object{Key: []byte("forever"), Value: []byte("v"), Version: 1}
	loc, _, err := d.Append(&more)
	must(t, err)
	if _, _, _, err := d.Commit(more.Key, loc); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := d.Delete([]byte("key000"), 1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	found := map[string]bool{}
	var withTTL int
	for range 50 { // random picks: enough rounds to visit every chunk
		withTTL = d.SampleExpired(1000, len(d.chunks), func(k []byte) { found[string(k)] = true })
	}
	if len(found) != 19 || found["key000"] || found["forever"] || withTTL == 0 {
		t.Fatalf("expired keys found: %d (%v), %d with a TTL in the last sample", len(found), found, withTTL)
	}
	clear(found)
	d.SampleExpired(999, len(d.chunks), func(k []byte) { found[string(k)] = true })
	if len(found) != 0 {
		t.Fatalf("keys found expired before their time: %v", found)
	}
}

// TestFragments: an object larger than a chunk is stored as fragments in
// several chunks; Get assembles it, an overwrite (smaller or larger),
// Abort, Delete and compaction act on every fragment, and Assemble puts
// fragments found in chunks back together.
func TestFragments(t *testing.T) {
	d, err := NewData(256)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}, {List: 1, Position: 1}})
	value := func(n int, b byte) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = b + byte(i%7)
		}
		return v
	}
	write := func(key string, v []byte, version uint64) {
		t.Helper()
		o := Object{Key: []byte(key), Value: v, Version: version, ExpireAt: 1_800_000_000_000}
		loc, _, err := d.Append(&o)
		must(t, err)
		if ok, _, _, err := d.Commit(o.Key, loc); !ok || err != nil {
			t.Fatalf("commit %s: %v %v", key, ok, err)
		}
	}
	check := func(key string, want []byte) {
		t.Helper()
		o, ok := d.Get([]byte(key))
		if !ok || !bytes.Equal(o.Value, want) || o.Fragment || o.ExpireAt != 1_800_000_000_000 {
			t.Fatalf("%s: %d bytes (found %v, fragment %v), want %d", key, len(o.Value), ok, o.Fragment, len(want))
		}
	}
	write("small", value(10, 'a'), 1)
	write("big", value(1000, 'b'), 2)
	check("big", value(1000, 'b'))
	if n := len(d.frags["big"]); n < 4 {
		t.Fatalf("a 1000-byte value in 256-byte chunks took %d fragments", n)
	}
	if st := d.Stats(); st.Keys != 2 || st.LogicalBytes != len("small")+10+len("big")+1000 {
		t.Fatalf("stats %+v", st)
	}
	write("big", value(600, 'c'), 3) // fragments replace fragments
	check("big", value(600, 'c'))
	write("small", value(700, 'd'), 4) // fragments replace a whole object
	check("small", value(700, 'd'))
	write("small", value(5, 'e'), 5) // a whole object replaces fragments
	check("small", value(5, 'e'))
	if _, ok := d.frags["small"]; ok {
		t.Fatal("fragments of a replaced object are still listed")
	}
	// An aborted fragmented write leaves nothing behind.
	before := d.Stats()
	o := Object{Key: []byte("gone"), Value: value(900, 'f'), Version: 6}
	loc, _, err := d.Append(&o)
	must(t, err)
	if _, err := d.Abort(loc); err != nil {
		t.Fatal(err)
	}
	if after := d.Stats(); after.LiveBytes != before.LiveBytes || len(d.staging) != 0 {
		t.Fatalf("after an abort: %d live bytes, %d before; %d staged", after.LiveBytes, before.LiveBytes, len(d.staging))
	}
	// Every fragment is found in the chunks and reassembles; a missing
	// one leaves the object out.
	var objs []Object
	d.Chunks(func(_ ChunkID, b []byte, _ bool) {
		_ = Scan(bytes.Clone(b), func(_ int, o Object) bool { objs = append(objs, o); return true })
	})
	whole := Assemble(objs)
	found := map[string]int{}
	for _, o := range whole {
		found[string(o.Key)] = len(o.Value)
	}
	if found["big"] != 600 || found["small"] != 5 || len(found) != 2 {
		t.Fatalf("assembled %v", found)
	}
	for i, o := range objs {
		if o.Fragment && o.Offset > 0 {
			if got := Assemble(slices.Delete(slices.Clone(objs), i, i+1)); len(got) != 1 {
				t.Fatalf("assembled %d objects with a fragment missing", len(got))
			}
			break
		}
	}
	// Compaction lists a fragmented object whole from any of its chunks.
	for _, l := range d.frags["big"] {
		res := d.Residents(d.chunks[l.Chunk].id)
		if !slices.ContainsFunc(res, func(r Object) bool { return string(r.Key) == "big" && len(r.Value) == 600 && !r.Fragment }) {
			t.Fatalf("residents of %s: %v", d.chunks[l.Chunk].id, res)
		}
	}
	if ok, _, err := d.Delete([]byte("big"), 10); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok := d.frags["big"]; ok || d.Stats().Keys != 1 {
		t.Fatalf("a deleted fragmented object is still listed: %v, %d keys", d.frags, d.Stats().Keys)
	}
	if _, _, ok := d.Update([]byte("small"), &Object{Key: []byte("small"), Value: value(5, 'g'), Version: 11, ExpireAt: 1_800_000_000_000}); !ok {
		t.Fatal("a whole object of the same size was not updated in place")
	}
}
