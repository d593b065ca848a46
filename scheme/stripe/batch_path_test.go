package stripe

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// batchSetup is a net of nodes engines with scheme spec, shard 0 and its
// coordinator's engine, and the scheme bound on it.
func batchSetup(t *testing.T, nodes int, spec string) (*cluster.Map, cluster.SchemeEntry, *testNet, cluster.Shard, *Engine, kind.Packed) {
	t.Helper()
	m, entry, net := engineNet(t, nodes, spec)
	sh := m.Shards[0]
	coord := net.engine(sh.Placement[0])
	return m, entry, net, sh, coord, packedOn(t, m, entry, coord)
}

// keysOfShard returns n keys of shard sh's slots, from prefix.
func keysOfShard(sh cluster.Shard, prefix string, n int) [][]byte {
	var keys [][]byte
	for i := 0; len(keys) < n; i++ {
		key := fmt.Appendf(nil, "%s:%d", prefix, i)
		if s := keyslot.Of(key); s >= sh.First && s <= sh.Last {
			keys = append(keys, key)
		}
	}
	return keys
}

// writeBatch writes every key = value(key, version) at version from
// writers goroutines at once, so that they share rounds, each committed
// once its round is durable.
func writeBatch(t *testing.T, p kind.Packed, keys [][]byte, version uint64, writers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(keys); i += writers {
				ctx := context.Background()
				st := &kind.Staged{Key: keys[i], Value: valueOf(keys[i], version), Version: version}
				if err := p.Stage(ctx, st); err != nil {
					errs <- err
					return
				}
				p.Flush(ctx, []*kind.Staged{st})
				if st.Err != nil {
					errs <- st.Err
					return
				}
				if _, err := p.Commit(st); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func valueOf(key []byte, version uint64) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "%s@%d;", key, version), 4)
}

// batchStripesOf gathers, for every batch stripe coordinator eng wrote
// in scheme s, its pieces from the list's holders (and chunk 0 from the
// coordinator), zero-padded to the stripe's length.
func batchStripesOf(t *testing.T, net *testNet, m *cluster.Map, s *schemeState, self cluster.NodeID) map[uint64][][]byte {
	t.Helper()
	out := map[uint64][][]byte{}
	k, parities := s.spec.K, batchParities(s.spec)
	for slot := range s.batch.data.stripes {
		shard, serial, ok := s.batch.data.Serial(uint32(slot))
		if !ok {
			continue
		}
		holders, err := listHolders(m, s.spec, shard)
		if err != nil {
			t.Fatal(err)
		}
		lens := s.batch.data.Lens(uint32(slot))
		n := 0
		for _, l := range lens {
			n = max(n, l)
		}
		shards := make([][]byte, k+parities)
		for role := range shards {
			node := holders[batchPosition(s.spec, role, s.batch.data.stripes[slot].c)]
			if role == 0 && node.ID == self {
				shards[0] = padded(s.batch.data.stripes[slot].kept[0], n)
				continue
			}
			p, ok := net.engine(node.ID).pieces.get(batchPieceKey{scheme: s.id, shard: shard, serial: serial, role: uint8(role)})
			if !ok {
				t.Fatalf("stripe %d: %s lacks role %d", serial, node.ID, role)
			}
			shards[role] = padded(p.bytes, n)
		}
		out[serial] = shards
	}
	return out
}

// TestBatchWritesEncodeWholeStripes writes through the batch path of
// stripe:4+2@batch and hybrid:4+2@batch from many writers at once
// (BCStore §III-A): every key reads back from the coordinator where its
// chunk is kept here; every stripe's parity equals a full re-encode of
// its data chunks as the holders keep them; hybrid's coordinator keeps
// every data chunk, stripe's only chunk 0.
func TestBatchWritesEncodeWholeStripes(t *testing.T) {
	for _, spec := range []string{"stripe:4+2@batch", "hybrid:4+2@batch:200us", "stripe:3+1/512@batch"} {
		t.Run(spec, func(t *testing.T) {
			m, entry, net, sh, coord, p := batchSetup(t, 6, spec)
			keys := keysOfShard(sh, "k", 600)
			writeBatch(t, p, keys, 5, 16)
			s := coord.byID(entry.ID)
			local := 0
			for _, key := range keys {
				meta, v, ok := p.Find(key, true)
				if !ok {
					t.Fatalf("%s not found", key)
				}
				if meta.Flags&kind.RemoteValue != 0 {
					continue // kept on another node: TestBatchReadsRemoteAndDegraded reads it
				}
				local++
				if meta.Version != 5 || !bytes.Equal(v, valueOf(key, 5)) {
					t.Fatalf("%s: version %d value %q", key, meta.Version, v)
				}
			}
			if hybrid := s.spec.Kind.String() == "hybrid"; (hybrid && local != len(keys)) || (!hybrid && (local == 0 || local == len(keys))) {
				t.Errorf("%d of %d keys read locally", local, len(keys))
			}
			stripes := batchStripesOf(t, net, m, s, coord.host.Self())
			if len(stripes) == 0 {
				t.Fatal("no batch stripe")
			}
			for serial, shards := range stripes {
				want := cloneShards(shards)
				for j := s.spec.K; j < len(want); j++ {
					clear(want[j])
				}
				if err := s.batch.codec.Encode(want); err != nil {
					t.Fatal(err)
				}
				for j := s.spec.K; j < len(want); j++ {
					if !bytes.Equal(want[j], shards[j]) {
						t.Fatalf("stripe %d: parity %d differs from a re-encode", serial, j-s.spec.K)
					}
				}
			}
			if st := s.batch.data.Stats(); st.Keys != len(keys) || st.GarbageRatio() != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestBatchRoundDeduplicates: writes of one key in one round store only
// the newest version; every writer commits, and the key reads at the
// newest. An overwrite in a later round leaves the old object as garbage
// and sends nothing for it (BCStore §III-B).
func TestBatchRoundDeduplicates(t *testing.T) {
	_, entry, _, sh, coord, p := batchSetup(t, 6, "hybrid:4+2@batch:100ms")
	key := keysOfShard(sh, "dup", 1)[0]
	ctx := context.Background()
	var ws []*kind.Staged
	for v := uint64(1); v <= 5; v++ {
		w := &kind.Staged{Key: key, Value: valueOf(key, v), Version: v}
		must(t, p.Stage(ctx, w))
		ws = append(ws, w)
	}
	p.Flush(ctx, ws)
	for _, w := range ws { // oldest first, as a pipeline commits
		must(t, w.Err)
		if applied, err := p.Commit(w); err != nil || !applied {
			t.Fatalf("commit of version %d: %v %v", w.Version, applied, err)
		}
		if meta, v, _ := p.Find(key, true); meta.Version != 5 || !bytes.Equal(v, valueOf(key, 5)) {
			t.Fatalf("after committing version %d: version %d", w.Version, meta.Version)
		}
	}
	s := coord.byID(entry.ID)
	if st := s.batch.data.Stats(); st.Stripes != 1 || st.GarbageObjects != 0 {
		t.Fatalf("one round of one key: %+v", st)
	}
	writeBatch(t, p, [][]byte{key}, 6, 1)
	if st := s.batch.data.Stats(); st.Stripes != 2 || st.GarbageObjects != 1 || st.GarbageRatio() < 0.4 {
		t.Errorf("after an overwrite: %+v, garbage ratio %.2f", st, st.GarbageRatio())
	}
}

// TestBatchReadsRemoteAndDegraded: under stripe:4+2@batch the keys whose
// objects are in chunks 1..3 are read from those chunks' holders, and,
// with up to M of the stripe's other nodes down, decoded from the pieces
// left (the coordinator's chunk 0 among them); with more, the read fails
// and names the key rather than reading it as absent.
func TestBatchReadsRemoteAndDegraded(t *testing.T) {
	_, _, net, sh, _, p := batchSetup(t, 6, "stripe:4+2@batch")
	keys := keysOfShard(sh, "r", 300)
	writeBatch(t, p, keys, 3, 8)
	ctx := context.Background()
	readAll := func(stage string) (failed int) {
		t.Helper()
		for _, key := range keys {
			meta, v, ok := p.Find(key, true)
			if !ok {
				t.Fatalf("%s: %s not found", stage, key)
			}
			if meta.Flags&kind.RemoteValue != 0 {
				if meta, v, err := p.Fetch(ctx, key); err != nil {
					if !strings.Contains(err.Error(), string(key)) {
						t.Fatalf("%s: %s: an error that does not name the key: %v", stage, key, err)
					}
					failed++
					continue
				} else if meta.Version != 3 || !bytes.Equal(v, valueOf(key, 3)) {
					t.Fatalf("%s: fetched %s version %d", stage, key, meta.Version)
				}
				continue
			}
			if !bytes.Equal(v, valueOf(key, 3)) {
				t.Fatalf("%s: %s reads %q", stage, key, v)
			}
		}
		return failed
	}
	if f := readAll("all up"); f != 0 {
		t.Fatalf("%d reads failed with every node up", f)
	}
	net.kill(sh.Placement[1]) // data chunk 1's holder: its objects are decoded
	net.kill(sh.Placement[4]) // and a parity holder
	if f := readAll("two down"); f != 0 {
		t.Fatalf("%d reads failed with M nodes down", f)
	}
	net.kill(sh.Placement[2])
	if f := readAll("three down"); f == 0 {
		t.Fatal("every read succeeded with M+1 nodes down")
	}
}

// TestBatchGCMovesFewestAndFrees: overwrites leave garbage; the GC
// (BCStore §III-B) takes the stripes with the fewest live objects, the
// node rewrites their objects (here: put at a new version, as the core's
// relocation does), and the emptied stripes are freed on every holder;
// every key still reads its newest value.
func TestBatchGCMovesFewestAndFrees(t *testing.T) {
	for _, spec := range []string{"stripe:4+2/512@batch", "hybrid:3+2/512@batch"} {
		t.Run(spec, func(t *testing.T) {
			m, entry, net, sh, coord, p := batchSetup(t, 6, spec)
			keys := keysOfShard(sh, "gc", 400)
			writeBatch(t, p, keys, 1, 8)
			writeBatch(t, p, keys[:300], 2, 8) // three quarters of the first rounds' objects are garbage now
			s := coord.byID(entry.ID)
			before := s.batch.data.Stats()
			if before.GarbageRatio() < batchGCGoal {
				t.Fatalf("garbage ratio %.2f before the GC", before.GarbageRatio())
			}
			heldBefore := 0
			for _, n := range m.Nodes {
				heldBefore += net.engine(n.ID).pieces.bytes
			}
			version := uint64(10)
			for round := 0; round < 20 && s.batch.data.Stats().GarbageRatio() > batchGCGoal; round++ {
				for _, r := range coord.BatchGC(context.Background(), 1<<20) {
					version = relocate(t, p, r.Objects, version)
				}
				coord.FreeEmptyBatchStripes()
			}
			after := s.batch.data.Stats()
			if after.GarbageRatio() > batchGCGoal || after.Stripes >= before.Stripes {
				t.Fatalf("after the GC: %+v (ratio %.2f), before %+v", after, after.GarbageRatio(), before)
			}
			heldAfter := 0
			for _, n := range m.Nodes {
				heldAfter += net.engine(n.ID).pieces.bytes
			}
			if heldAfter >= heldBefore {
				t.Errorf("holders keep %d bytes after the GC, %d before", heldAfter, heldBefore)
			}
			for i, key := range keys {
				want := uint64(1)
				if i < 300 {
					want = 2
				}
				meta, v, ok := p.Find(key, true)
				if ok && meta.Flags&kind.RemoteValue != 0 {
					var err error
					meta, v, err = p.Fetch(context.Background(), key)
					ok = err == nil
				}
				if !ok || !bytes.Equal(v, valueOf(key, want)) {
					t.Fatalf("%s after the GC: %q (found %v)", key, v, ok)
				}
			}
		})
	}
}

// relocate rewrites objs through p at versions from version+1 on, staged
// together and flushed as one group, as the core's relocation does, and
// returns the last version used.
func relocate(t *testing.T, p kind.Packed, objs []Object, version uint64) uint64 {
	t.Helper()
	ctx := context.Background()
	ws := make([]*kind.Staged, len(objs))
	for i, o := range objs {
		version++
		ws[i] = &kind.Staged{Key: o.Key, Value: o.Value, Version: version, Relocate: true}
		must(t, p.Stage(ctx, ws[i]))
	}
	p.Flush(ctx, ws)
	for _, w := range ws {
		must(t, w.Err)
		if _, err := p.Commit(w); err != nil {
			t.Fatal(err)
		}
	}
	return version
}

// TestBatchGCMergesSparseStripes: writes too few to fill their rounds'
// stripes (one object each) cost parity as large as the data; once the
// sparse stripes would fill a stripe between them the GC merges them.
func TestBatchGCMergesSparseStripes(t *testing.T) {
	_, entry, _, sh, coord, p := batchSetup(t, 6, "stripe:4+2/256@batch:5ms")
	keys := keysOfShard(sh, "sparse", 64)
	writeBatch(t, p, keys, 1, 1) // one writer: one object a round
	s := coord.byID(entry.ID)
	if st := s.batch.data.Stats(); st.Stripes != len(keys) {
		t.Fatalf("%d stripes for %d lone writes", st.Stripes, len(keys))
	}
	version := uint64(1)
	for _, r := range coord.BatchGC(context.Background(), 1<<20) {
		version = relocate(t, p, r.Objects, version)
	}
	coord.FreeEmptyBatchStripes()
	if st := s.batch.data.Stats(); st.Stripes > len(keys)/8 || st.Keys != len(keys) {
		t.Errorf("after merging: %+v", st)
	}
}

// TestBatchRecoveryEveryPatternUpToM: the coordinator of shard 0 writes,
// overwrites and deletes batch keys, then fails with up to M−1 other
// nodes of its list (every such pattern). The shard's new coordinator
// lists the shard's batch stripes on the survivors, reads or decodes
// their data chunks, and recovers every live key at its newest version;
// no deleted key comes back (its dead marks); nothing is reported lost;
// and Defer frees the old stripes on the holders.
func TestBatchRecoveryEveryPatternUpToM(t *testing.T) {
	for _, spec := range []string{"stripe:4+2/512@batch", "hybrid:4+2/512@batch"} {
		for _, others := range subsets(5, 1) { // every subset of at most one other node
			kill := []int{0}
			for _, o := range others {
				kill = append(kill, o+1)
			}
			t.Run(fmt.Sprintf("%s/kill%v", spec, kill), func(t *testing.T) {
				m, entry, net, sh, _, p := batchSetup(t, 6, spec)
				keys := keysOfShard(sh, "rec", 200)
				writeBatch(t, p, keys, 1, 8)
				writeBatch(t, p, keys[:80], 2, 8)
				writeBatch(t, p, keys[150:170], 3, 8) // older versions of keys then deleted: their dead marks keep them out
				deleted := map[string]bool{}
				for _, key := range keys[150:170] {
					if pend := p.Remove(key, 100); pend != nil {
						must(t, pend.Send(context.Background()))
					}
					deleted[string(key)] = true
				}
				run := recoverShard0(t, m, entry, net, kill)
				if len(run.host.lost) != 0 {
					t.Fatalf("keys reported lost within tolerance: %+v", run.host.lost)
				}
				for i, key := range keys {
					o, ok := run.got[string(key)]
					switch want := uint64(1 + btoi(i < 80)); {
					case deleted[string(key)] && ok:
						t.Fatalf("deleted key %s recovered at version %d", key, o.Version)
					case !deleted[string(key)] && (!ok || o.Version != want || !bytes.Equal(o.Value, valueOf(key, want))):
						t.Fatalf("key %s: recovered version %d %q (found %v), want version %d", key, o.Version, o.Value, ok, want)
					}
				}
				for _, n := range m.Nodes {
					if e := net.engines[n.ID]; e != nil && len(e.pieces.list(entry.ID, uint16(sh.ID), 0, 1<<20, false)) != 0 {
						t.Errorf("%s still holds the old stripes after Defer", n.ID)
					}
				}
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBatchRecoveryBeyondToleranceNamesKeys: with M+1 nodes of the list
// gone (the coordinator among them) the stripes cannot be decoded; the
// recovery names their keys by the first parity holder's manifest tags
// (decision 0005) and returns none of them as found.
func TestBatchRecoveryBeyondToleranceNamesKeys(t *testing.T) {
	m, entry, net := engineNet(t, 6, "stripe:4+2/512@batch")
	sh := m.Shards[0]
	p := packedOn(t, m, entry, net.engine(sh.Placement[0]))
	keys := keysOfShard(sh, "gone", 100)
	writeBatch(t, p, keys, 1, 8)
	run := recoverShard0(t, m, entry, net, []int{0, 1, 2})
	if len(run.host.lost) == 0 {
		t.Fatal("nothing reported lost beyond tolerance")
	}
	if len(run.got) != 0 {
		t.Errorf("%d keys recovered from stripes missing three pieces", len(run.got))
	}
}

// TestBatchRebuildPutsLostPiecesOnStandIns: a holder of a stripe@batch
// list fails; its stand-in gets every lost piece from the rebuild (read
// from the other data chunks, parity encoded again), after which the list
// survives M more failures: every key still reads.
func TestBatchRebuildPutsLostPiecesOnStandIns(t *testing.T) {
	for _, spec := range []string{"stripe:4+2/512@batch", "hybrid:4+2/512@batch"} {
		t.Run(spec, func(t *testing.T) {
			m, entry, net, sh, coord, p := batchSetup(t, 8, spec) // two spare places for stand-ins
			keys := keysOfShard(sh, "rb", 200)
			writeBatch(t, p, keys, 4, 8)
			for _, pos := range []int{2, 5} { // a data position and a parity (or chunk 0's copy)
				net.kill(m.Shards[0].Placement[pos])
				m = kindtest.Apply(t, m, cluster.MarkFailed{ID: m.Shards[0].Placement[pos]})
				net.setMap(m)
				must(t, coord.Rebuild(context.Background(), m, m.Shards[0]))
			}
			holders, err := listHolders(m, coord.byID(entry.ID).spec, 0)
			must(t, err)
			var down []cluster.NodeID
			for _, h := range holders[1:] {
				if h.State == cluster.Up && len(down) < 2 {
					down = append(down, h.ID)
				}
			}
			for _, id := range down { // M more failures of the rebuilt list, the coordinator up
				net.kill(id)
			}
			for _, key := range keys {
				meta, v, ok := p.Find(key, true)
				if ok && meta.Flags&kind.RemoteValue != 0 {
					var err error
					meta, v, err = p.Fetch(context.Background(), key)
					if err != nil {
						t.Fatalf("%s after the rebuild and %d more failures: %v", key, len(down), err)
					}
				}
				if !ok || !bytes.Equal(v, valueOf(key, 4)) {
					t.Fatalf("%s: %q (found %v)", key, v, ok)
				}
			}
		})
	}
}

// TestBatchLayoutAndTolerance: SCHEME.OF of a batch key names its
// stripe's pieces and says it tolerates M failures with every node up,
// one fewer for each failure of its stripe's nodes.
func TestBatchLayoutAndTolerance(t *testing.T) {
	for _, spec := range []string{"stripe:4+2@batch", "hybrid:4+2@batch"} {
		m, entry, net := engineNet(t, 6, spec)
		sh := m.Shards[0]
		coord := net.engine(sh.Placement[0])
		keys := keysOfShard(sh, "of", 40)
		writeBatch(t, packedOn(t, m, entry, coord), keys, 1, 4)
		b := Bind(coord, entry, kindtest.NewEnv(m, coord.host.Self()))
		for _, key := range keys {
			l, ok := b.Layout(m, key)
			if !ok || l.Tolerates != 2 || len(l.Pieces) < 5 || l.Details[1].Value != "batch" {
				t.Fatalf("%s: %s: layout %+v (%v)", spec, key, l, ok)
			}
		}
		failed := kindtest.Apply(t, m, cluster.MarkFailed{ID: sh.Placement[3]})
		for _, key := range keys {
			if l, _ := b.Layout(failed, key); l.Tolerates != 1 {
				t.Fatalf("%s: %s tolerates %d with one node of its stripe down", spec, key, l.Tolerates)
			}
		}
	}
}

// TestBatchVerify: SCHEME.VERIFY of a batch key checks every piece of
// its stripe against a fresh encode, and reports a parity piece changed
// behind the coordinator's back.
func TestBatchVerify(t *testing.T) {
	m, entry, net := engineNet(t, 6, "stripe:4+2@batch")
	sh := m.Shards[0]
	coord := net.engine(sh.Placement[0])
	keys := keysOfShard(sh, "v", 40)
	writeBatch(t, packedOn(t, m, entry, coord), keys, 1, 4)
	c := coord.verifyKey(context.Background(), m, keys[0], entry)
	if len(c.Problems) != 0 || c.Checked != 6 {
		t.Fatalf("verify: %+v", c)
	}
	s := coord.byID(entry.ID)
	r, _ := s.ref(keys[0])
	held := &net.engine(sh.Placement[4]).pieces
	pc, ok := held.get(batchPieceKey{scheme: entry.ID, shard: r.shard, serial: r.serial, role: uint8(s.spec.K)})
	if !ok {
		t.Fatal("no parity piece on position 4")
	}
	pc.bytes[0] ^= 1
	if c := coord.verifyKey(context.Background(), m, keys[0], entry); len(c.Problems) != 1 {
		t.Fatalf("verify after corrupting parity: %+v", c)
	}
}

// TestBatchPositionsSwapForAStandInCoordinator: the roles of a batch
// stripe take distinct positions of the list for any coordinator
// position c, and none is the coordinator's own under hybrid (which keeps
// every data chunk) or other than chunk 0 under stripe (which keeps it).
func TestBatchPositionsSwapForAStandInCoordinator(t *testing.T) {
	for _, spec := range []string{"stripe:4+2", "hybrid:4+2", "hybrid:2+3", "stripe:3+1"} {
		sp, err := scheme.Parse(spec)
		must(t, err)
		for c := range sp.K + sp.M {
			seen := map[int]bool{}
			for role := range sp.K + batchParities(sp) {
				p := batchPosition(sp, role, c)
				if seen[p] || p < 0 || p >= sp.K+sp.M {
					t.Fatalf("%s c=%d: role %d at position %d, taken or out of the list", spec, c, role, p)
				}
				seen[p] = true
				if p == c && (sp.Kind == scheme.Hybrid || role != 0) {
					t.Fatalf("%s c=%d: role %d on the coordinator's own position", spec, c, role)
				}
			}
		}
	}
}

// TestBatchRecoveryDropsUnfinishedRound: a coordinator fails while
// putting a round (robustness seed 19, a partitioned leader): two of its
// pieces arrived, the first parity holder's with the manifest naming a
// key. The round cannot be decoded, but a live holder lacks its piece, so
// it was never acknowledged: the key comes back at its committed version
// and nothing is reported lost.
func TestBatchRecoveryDropsUnfinishedRound(t *testing.T) {
	m, entry, net, sh, coord, p := batchSetup(t, 6, "stripe:4+2/512@batch")
	keys := keysOfShard(sh, "unfinished", 40)
	writeBatch(t, p, keys, 1, 4)
	s := coord.byID(entry.ID)
	objs := batchOf([]string{string(keys[0]), string(keys[1])}, 9, 30)
	stripes, err := packBatch(objs, orderByHeat(objs), s.spec.K, s.spec.ChunkSize())
	must(t, err)
	ps := stripes[0]
	must(t, encodeBatch(s.batch.codec, ps))
	holders, err := listHolders(m, s.spec, uint16(sh.ID))
	must(t, err)
	for _, role := range []int{1, s.spec.K} { // a data piece and the first parity, with the manifest
		req := batchPutReq{Key: batchPieceKey{scheme: entry.ID, shard: uint16(sh.ID), serial: 1 << 30, role: uint8(role)}, Lens: ps.lens(), Bytes: ps.pieces()[role]}
		if role == s.spec.K {
			req.Manifest = ps.manifest()
		}
		_, err := serveBatch(&net.engine(holders[role].ID).pieces, encodeBatchPuts(entry.ID, uint16(sh.ID), []batchPutReq{req}, nil))
		must(t, err)
	}
	run := recoverShard0(t, m, entry, net, []int{0})
	if len(run.host.lost) != 0 {
		t.Fatalf("keys reported lost for an unfinished round: %+v", run.host.lost)
	}
	for _, key := range keys {
		if o, ok := run.got[string(key)]; !ok || o.Version != 1 {
			t.Fatalf("%s: recovered version %d (found %v), want its committed version 1", key, o.Version, ok)
		}
	}
}

// TestBatchDeletionWaitsForEarlierMarks: a key moved out of a batch scheme
// leaves its object's dead mark queued (sent later); a deletion of the key
// afterwards, whatever scheme it is in then, still gets a Pending from the
// batch scheme that delivers every mark queued before it, so once the
// core purges the tombstone no recovery brings the old object back
// (robustness seed 32: a key moved from stripe:2+1@batch to stripe:2+1,
// then deleted).
func TestBatchDeletionWaitsForEarlierMarks(t *testing.T) {
	m, entry, net, sh, _, p := batchSetup(t, 6, "stripe:4+2/512@batch")
	keys := keysOfShard(sh, "moved", 30)
	writeBatch(t, p, keys, 1, 4)
	if p.Remove(keys[0], 5) == nil { // the move out: its Pending is sent later, not now
		t.Fatal("no Pending for a batch key's removal")
	}
	del := p.Remove(keys[0], 9) // the deletion, the key no longer in the scheme
	if del == nil {
		t.Fatal("a deletion after a move out owes no marks")
	}
	must(t, del.Send(context.Background()))
	run := recoverShard0(t, m, entry, net, []int{0})
	if o, ok := run.got[string(keys[0])]; ok {
		t.Fatalf("the moved and deleted key came back at version %d", o.Version)
	}
	if len(run.got) != len(keys)-1 {
		t.Errorf("recovered %d keys, want %d", len(run.got), len(keys)-1)
	}
}
