package stripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// readChecked reads key through p as the coordinator core does: Find
// with its value, Fetch where Find left the value out, and again after a
// Fetch that repaired the key's chunk (kind.ErrPieceGone).
func readChecked(t *testing.T, p kind.Packed, key []byte) ([]byte, error) {
	t.Helper()
	for range 4 {
		meta, v, ok := p.Find(key, true)
		if !ok {
			return nil, nil
		}
		if meta.Flags&kind.RemoteValue == 0 {
			return v, nil
		}
		_, v, err := p.Fetch(context.Background(), key)
		if !errors.Is(err, kind.ErrPieceGone) {
			return v, err
		}
	}
	t.Fatalf("%s: still corrupt after its repairs", key)
	return nil, nil
}

// checkReads fails unless every key of want reads back its value through
// p, and returns how many did.
func checkReads(t *testing.T, p kind.Packed, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, err := readChecked(t, p, []byte(k))
		if err != nil || string(v) != want[k] {
			t.Fatalf("%s reads %q, %v; wrote %q", k, v, err, want[k])
		}
	}
}

// TestGetRepairsCorruptChunks: DESIGN.md §4 "Corruption" (KVMD §3.2):
// every key's object, flipped in its coordinator's chunk behind its
// checksum's back, reads back as written — open chunks restored from a
// parity holder's copy, sealed ones from the replica (hybrid) or by a
// decode of the stripe without them — and the chunk is repaired in place:
// a second read finds nothing to repair.
func TestGetRepairsCorruptChunks(t *testing.T) {
	for _, spec := range []string{"stripe:4+2/512", "hybrid:4+2/512"} {
		t.Run(spec, func(t *testing.T) {
			m, entry, net := engineNet(t, 6, spec)
			sh := m.Shards[0]
			coord := net.engine(sh.Placement[0])
			want := writeKeys(t, m, entry, coord, sh, 80)
			p := packedOn(t, m, entry, coord)
			sealed, open := chunkStates(coord, entry, want)
			if sealed == 0 || open == 0 {
				t.Fatalf("%d keys in sealed chunks, %d in open ones: want both", sealed, open)
			}
			for k := range want {
				if coord.FlipKey([]byte(k)) != 1 {
					t.Fatalf("%s: flipped %d copies on its coordinator, want 1", k, coord.FlipKey([]byte(k)))
				}
			}
			checkReads(t, p, want)
			st := coord.Stats()
			if st.CorruptChunks.Load() == 0 || st.Repaired.Load() != st.CorruptChunks.Load() || st.Unrepaired.Load() != 0 {
				t.Fatalf("corrupt %d, repaired %d, unrepaired %d", st.CorruptChunks.Load(), st.Repaired.Load(), st.Unrepaired.Load())
			}
			before := st.CorruptChunks.Load()
			checkReads(t, p, want)
			if st.CorruptChunks.Load() != before {
				t.Fatalf("a second read found %d more corrupt chunks: the repair did not stick", st.CorruptChunks.Load()-before)
			}
		})
	}
}

// chunkStates counts the keys of want whose objects lie in sealed and in
// open chunks on eng.
func chunkStates(eng *Engine, entry cluster.SchemeEntry, want map[string]string) (sealed, open int) {
	s := eng.byID(entry.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range want {
		id, _, _ := s.data.Locate([]byte(k))
		if _, isSealed, _, _ := s.data.Read(id); isSealed {
			sealed++
		} else {
			open++
		}
	}
	return sealed, open
}

// TestDecodeAroundACorruptParity: a sealed chunk's object and one parity
// chunk of its stripe are both corrupt; the decode with every parity
// fails the object's check, the one without the corrupt parity passes.
func TestDecodeAroundACorruptParity(t *testing.T) {
	m, entry, net := engineNet(t, 6, "stripe:4+2/512")
	sh := m.Shards[0]
	coord := net.engine(sh.Placement[0])
	want := writeKeys(t, m, entry, coord, sh, 80)
	p := packedOn(t, m, entry, coord)
	settleSends(t, coord)
	s := coord.byID(entry.ID)
	var key string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		s.mu.Lock()
		id, off, _ := s.data.Locate([]byte(k))
		_, sealed, _, _ := s.data.Read(id)
		s.mu.Unlock()
		if sealed {
			key = k
			if net.engine(sh.Placement[4]).flipParity(off) == 0 {
				t.Fatal("the first parity holder holds no parity chunk")
			}
			break
		}
	}
	if key == "" {
		t.Fatal("no key in a sealed chunk")
	}
	coord.FlipKey([]byte(key))
	v, err := readChecked(t, p, []byte(key))
	if err != nil || string(v) != want[key] {
		t.Fatalf("%s reads %q, %v; wrote %q", key, v, err, want[key])
	}
}

// TestUnrepairableCorruptionNamesTheKey: an open chunk's object corrupt
// on its coordinator and in every parity holder's copy has no sound copy
// left: its read answers kind.CorruptError naming the key, never the
// wrong bytes and never nil.
func TestUnrepairableCorruptionNamesTheKey(t *testing.T) {
	m, entry, net := engineNet(t, 6, "stripe:4+2/4096")
	sh := m.Shards[0]
	coord := net.engine(sh.Placement[0])
	want := writeKeys(t, m, entry, coord, sh, 3) // one open chunk
	p := packedOn(t, m, entry, coord)
	settleSends(t, coord)
	key := slices.Sorted(maps.Keys(want))[0]
	flipped := 0
	for _, id := range sh.Placement[:6] {
		flipped += net.engine(id).FlipKey([]byte(key))
	}
	if flipped != 3 {
		t.Fatalf("flipped %d copies, want the chunk's and its 2 holders' copies", flipped)
	}
	v, err := readChecked(t, p, []byte(key))
	var ce *kind.CorruptError
	if !errors.As(err, &ce) || ce.Key != key || v != nil {
		t.Fatalf("read %q, %v; want a CorruptError naming %s", v, err, key)
	}
	if !errors.Is(err, kind.ErrPieceCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(key)) {
		t.Fatalf("%v: not a corruption error naming the key", err)
	}
	if coord.Stats().Unrepaired.Load() == 0 {
		t.Fatal("the failed repair is not counted")
	}
	for _, k := range slices.Sorted(maps.Keys(want))[1:] { // the chunk's other keys still read
		if v, err := readChecked(t, p, []byte(k)); err != nil || string(v) != want[k] {
			t.Fatalf("%s reads %q, %v", k, v, err)
		}
	}
}

// TestBatchReadsAroundCorruptPieces: under stripe:4+2@batch and
// hybrid:4+2@batch (BCStore §IV-B reads) every batch object, flipped in
// the coordinator's kept chunks and in every holder's pieces, reads back
// as written: decoded from the stripe without the piece that fails its
// check, and a kept copy restored.
func TestBatchReadsAroundCorruptPieces(t *testing.T) {
	for _, spec := range []string{"stripe:4+2@batch", "hybrid:4+2@batch"} {
		t.Run(spec, func(t *testing.T) {
			_, _, net, sh, coord, p := batchSetup(t, 6, spec)
			keys := keysOfShard(sh, "c", 120)
			writeBatch(t, p, keys, 3, 8)
			want := map[string]string{}
			flipped := 0
			for _, key := range keys {
				want[string(key)] = string(valueOf(key, 3))
				// One copy at a time: its kept chunk's, or its holder's
				// piece (DEBUG FLIP on every node finds it), read back
				// before the next is flipped.
				for _, id := range sh.Placement[:6] {
					if n := net.engine(id).FlipKey(key); n > 0 {
						flipped += n
						break
					}
				}
				checkReads(t, p, map[string]string{string(key): want[string(key)]})
			}
			checkReads(t, p, want)
			st := coord.Stats()
			if int(st.CorruptBatch.Load()) != flipped || st.Repaired.Load() != st.CorruptBatch.Load() || st.Unrepaired.Load() != 0 {
				t.Fatalf("%d copies flipped: %d found, %d repaired, %d unrepaired", flipped, st.CorruptBatch.Load(), st.Repaired.Load(), st.Unrepaired.Load())
			}
		})
	}
}

// TestScrubReplacesWhatDiffers: the scrub (scrub.go) finds what no read
// touches — a parity holder's copy of an open chunk, a hybrid replica's
// copy of a sealed chunk, a parity chunk, a coordinator's chunk — and
// replaces each from the sound bytes; a second pass finds nothing, and
// SCHEME.VERIFY's check of every stripe (VerifyAll) agrees.
func TestScrubReplacesWhatDiffers(t *testing.T) {
	for _, spec := range []string{"stripe:4+2/512", "hybrid:4+2/512"} {
		t.Run(spec, func(t *testing.T) {
			m, entry, net := engineNet(t, 6, spec)
			sh := m.Shards[0]
			coord := net.engine(sh.Placement[0])
			want := writeKeys(t, m, entry, coord, sh, 240)
			p := packedOn(t, m, entry, coord)
			settleSends(t, coord)
			sealedKey, openKey := keyIn(t, coord, entry, want, true, ""), keyIn(t, coord, entry, want, false, "")
			flips := 0
			for _, h := range holdersOfKey(t, m, coord, entry, openKey) { // their copies of the open chunk
				flips += net.engine(h.ID).FlipKey([]byte(openKey))
			}
			sealedHolders := holdersOfKey(t, m, coord, entry, sealedKey)
			flips += net.engine(sealedHolders[len(sealedHolders)-1].ID).FlipKey([]byte(sealedKey)) // a hybrid replica's copy
			flips += net.engine(sealedHolders[0].ID).flipParity(0)
			flips += coord.FlipKey([]byte(keyIn(t, coord, entry, want, true, sealedKey)))
			if flips < 4 {
				t.Fatalf("flipped %d copies, want at least 4", flips)
			}
			ctx := context.Background()
			r := coord.Scrub(ctx, func(int64) {})
			if r.Corrupt < 3 || r.Repaired != r.Corrupt {
				t.Fatalf("scrub: %+v; want every copy it found differing replaced", r)
			}
			if again := coord.Scrub(ctx, func(int64) {}); again.Corrupt != 0 || again.Busy != 0 {
				t.Fatalf("a second pass: %+v; want nothing found", again)
			}
			if v := coord.VerifyAll(ctx); len(v.Problems) != 0 {
				t.Fatalf("VerifyAll after the scrub: %v", v.Problems)
			}
			checkReads(t, p, want)
		})
	}
}

// holdersOfKey is the parity holders of the list key's chunk is in.
func holdersOfKey(t *testing.T, m *cluster.Map, eng *Engine, entry cluster.SchemeEntry, key string) []cluster.Node {
	t.Helper()
	s := eng.byID(entry.ID)
	s.mu.Lock()
	id, _, _ := s.data.Locate([]byte(key))
	s.mu.Unlock()
	holders, err := parityHolders(m, entry.Spec, id.List)
	must(t, err)
	return holders
}

// keyIn is a key of want whose object lies in a sealed (or open) chunk,
// other than apart's (if not "").
func keyIn(t *testing.T, eng *Engine, entry cluster.SchemeEntry, want map[string]string, sealed bool, apart string) string {
	t.Helper()
	s := eng.byID(entry.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	other, _, _ := s.data.Locate([]byte(apart))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		id, _, _ := s.data.Locate([]byte(k))
		if _, isSealed, _, _ := s.data.Read(id); isSealed == sealed && (apart == "" || id != other) {
			return k
		}
	}
	t.Fatalf("no key in a chunk sealed=%v", sealed)
	return ""
}

// TestScrubReplacesBatchPieces: for stripe:4+2@batch and
// hybrid:4+2@batch, objects flipped in the coordinator's kept chunks and
// in holders' data pieces, and a parity piece flipped, are all found by
// the scrub and replaced; a second pass finds nothing and SCHEME.VERIFY
// of every key passes.
func TestScrubReplacesBatchPieces(t *testing.T) {
	for _, spec := range []string{"stripe:4+2@batch", "hybrid:4+2@batch"} {
		t.Run(spec, func(t *testing.T) {
			_, _, net, sh, coord, p := batchSetup(t, 6, spec)
			keys := keysOfShard(sh, "s", 120)
			writeBatch(t, p, keys, 3, 8)
			// One corruption a stripe, in different ones (two in one
			// stripe with a third lost would be beyond stripe:4+2): a
			// kept chunk's object, a holder's data piece's, a parity piece.
			flipOnce := func(key []byte) {
				for _, id := range sh.Placement[:6] {
					if net.engine(id).FlipKey(key) > 0 {
						return
					}
				}
				t.Fatalf("no copy of %s to flip", key)
			}
			flipOnce(keys[0])
			flipOnce(keys[len(keys)-1])
			if flipParityPiece(net.engine(sh.Placement[4]), 8) == 0 {
				t.Fatal("no parity piece of stripe 8 was flipped")
			}
			ctx := context.Background()
			r := coord.Scrub(ctx, func(int64) {})
			if r.Corrupt != 3 || r.Repaired != r.Corrupt {
				t.Fatalf("scrub: %+v; want the 3 corrupt copies found and replaced", r)
			}
			if again := coord.Scrub(ctx, func(int64) {}); again.Corrupt != 0 {
				t.Fatalf("a second pass: %+v; want nothing found", again)
			}
			for _, key := range keys {
				if c := p.Verify(ctx, key, store.Meta{}, nil); len(c.Problems) != 0 {
					t.Fatalf("SCHEME.VERIFY %s after the scrub: %v", key, c.Problems)
				}
			}
		})
	}
}

// flipParityPiece flips the first byte of the parity pieces of batch
// stripe serial that eng holds, and returns how many it flipped.
func flipParityPiece(eng *Engine, serial uint64) int {
	h := &eng.pieces
	h.mu.Lock()
	defer h.mu.Unlock()
	flipped := 0
	for _, sp := range h.byShard {
		for _, hp := range sp.bySerial[serial] {
			if int(hp.role) >= len(hp.p.lens) && len(hp.p.bytes) > 0 {
				hp.p.bytes[0] ^= 0xFF
				flipped++
			}
		}
	}
	return flipped
}

// TestDamagedKeyBytesAreFoundAgain: damage to an object's key bytes makes
// its key's lookup miss; GetChecked then names the chunk as corrupt (the
// entry with the key's tag fails its check) instead of answering
// "absent", and a restore of the chunk finds the key again — also after
// the index grew meanwhile and placed the entry by the damaged key's hash
// (Index.Reseat).
func TestDamagedKeyBytesAreFoundAgain(t *testing.T) {
	d, err := NewData(4096)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	putAll(t, d, 10, 20, 1, 0)
	key := []byte("key003")
	id, off, _ := d.Locate(key)
	c := d.chunks[d.byID[id]]
	c.chunk.data[off+fixedHeader+2] ^= 0x01 // the key's first byte, past its two length bytes
	if _, found, err := d.GetChecked(key); found || !errors.Is(err, ErrChecksum) {
		t.Fatalf("a damaged key: found %v, %v; want its chunk named corrupt", found, err)
	}
	for i := range 2000 { // grow the index past the damage
		o := Object{Key: fmt.Appendf(nil, "more%05d", i), Value: []byte("v"), Version: 1}
		loc, _, err := d.Append(&o)
		if errors.Is(err, ErrNoList) {
			break
		}
		must(t, err)
		if _, _, _, err := d.Commit(o.Key, loc); err != nil {
			t.Fatal(err)
		}
	}
	sound, _, seq, _ := d.Read(id) // the chunk as its holders have it now
	sound[off+fixedHeader+2] ^= 0x01
	if changed, err := d.Restore(id, seq, sound); !changed || err != nil {
		t.Fatalf("restore: changed %v, %v", changed, err)
	}
	if o, found, err := d.GetChecked(key); !found || err != nil || o.Value[0] != 4 {
		t.Fatalf("after the restore: %s found %v, %v", o, found, err)
	}
}

// TestRemovingADamagedObjectKeepsParitySound: a deletion's delta is the
// object's bytes; taken from a damaged object it would put the damage
// into parity. The removal detaches the object, restores its chunk from
// the stripe and only then zeroes it: afterwards every stripe verifies
// against its parity and the chunk's other keys read back (also once
// their coordinator is lost and they are decoded).
func TestRemovingADamagedObjectKeepsParitySound(t *testing.T) {
	m, entry, net := engineNet(t, 6, "stripe:4+2/512")
	sh := m.Shards[0]
	coord := net.engine(sh.Placement[0])
	want := writeKeys(t, m, entry, coord, sh, 80)
	p := packedOn(t, m, entry, coord)
	settleSends(t, coord)
	key := keyIn(t, coord, entry, want, true, "")
	if coord.FlipKey([]byte(key)) != 1 {
		t.Fatal("no copy of the key on its coordinator")
	}
	pending := p.Remove([]byte(key), 1<<62)
	if pending == nil {
		t.Fatal("the removal owes its holders nothing")
	}
	must(t, pending.Send(context.Background()))
	delete(want, key)
	if v := coord.VerifyAll(context.Background()); len(v.Problems) != 0 {
		t.Fatalf("after removing a damaged object: %v", v.Problems)
	}
	checkReads(t, p, want)
	run := recoverShard0(t, m, entry, net, []int{0})
	checkRecovered(t, run, want)
}

// TestSealOverADamagedHolderCopy: a parity holder's copy of an open chunk
// is damaged; at the seal its checksum of the copy differs from the
// coordinator's (MemEC §4.3: the holder folds its copy into parity). The
// coordinator, its own chunk sound, resyncs the chunk to that holder
// whole: the writes that seal it succeed and every stripe verifies.
func TestSealOverADamagedHolderCopy(t *testing.T) {
	m, entry, net := engineNet(t, 6, "stripe:4+2/512")
	sh := m.Shards[0]
	coord := net.engine(sh.Placement[0])
	want := writeKeys(t, m, entry, coord, sh, 3) // one open chunk
	settleSends(t, coord)
	key := slices.Sorted(maps.Keys(want))[0]
	holders := holdersOfKey(t, m, coord, entry, key)
	if net.engine(holders[0].ID).FlipKey([]byte(key)) != 1 {
		t.Fatal("the holder has no copy of the open chunk")
	}
	p := packedOn(t, m, entry, coord)
	for i, n := 0, 0; n < 120; i++ { // enough to seal every open chunk
		k := fmt.Appendf(nil, "seal:%d", i)
		if s := keyslot.Of(k); s < sh.First || s > sh.Last {
			continue
		}
		n++
		put(t, p, k, []byte("a value long enough to fill chunks"), uint64(100+i))
		want[string(k)] = "a value long enough to fill chunks"
	}
	settleSends(t, coord)
	if v := coord.VerifyAll(context.Background()); len(v.Problems) != 0 {
		t.Fatalf("after sealing over a damaged copy: %v", v.Problems)
	}
	checkReads(t, p, want)
}

// TestBatchRecoveryDecodesAroundACorruptPiece: the coordinator of
// stripe:4+2@batch and hybrid:4+2@batch keys fails, and a surviving
// holder's data piece has objects flipped behind their checksums; the
// recovery decodes the stripes without that piece and hands over every
// key at its value, none of the flipped bytes.
func TestBatchRecoveryDecodesAroundACorruptPiece(t *testing.T) {
	for _, spec := range []string{"stripe:4+2/512@batch", "hybrid:4+2/512@batch"} {
		t.Run(spec, func(t *testing.T) {
			m, entry, net, sh, _, p := batchSetup(t, 6, spec)
			keys := keysOfShard(sh, "rc", 120)
			writeBatch(t, p, keys, 1, 8)
			flipped := 0
			for _, key := range keys[:40] {
				flipped += net.engine(sh.Placement[1]).FlipKey(key) // one holder's pieces
			}
			if flipped == 0 {
				t.Fatal("the holder's pieces hold none of the keys")
			}
			run := recoverShard0(t, m, entry, net, []int{0})
			if len(run.host.lost) != 0 {
				t.Fatalf("keys reported lost within tolerance: %+v", run.host.lost)
			}
			for _, key := range keys {
				if o, ok := run.got[string(key)]; !ok || !bytes.Equal(o.Value, valueOf(key, 1)) {
					t.Fatalf("key %s: recovered %q (found %v)", key, o.Value, ok)
				}
			}
			if run.eng.Stats().CorruptBatch.Load() == 0 {
				t.Fatal("the corrupt piece was not found")
			}
		})
	}
}
