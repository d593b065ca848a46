package stripe

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

// protoSim runs K+M nodes, each a Data (its own keys' objects, appended at
// its data positions of K rotated lists) and a Parity (its parity positions
// of M lists), joined by a network that delays, reorders and duplicates
// every update, as frames that fail and are sent again do. Node i holds
// position p of list (i−p) mod (K+M), as rotated shard placements give.
type protoSim struct {
	t       *testing.T
	rng     *rand.Rand
	k, m, n int
	np      int // holders keeping parity: m, or m−1 for hybrid
	hybrid  bool
	size    int
	data    []*Data
	parity  []*Parity
	net     []message
	acks    map[ackKey]map[int]bool // holders that applied an update
	sums    map[ChunkID][]byte      // the XOR of every delta sent per chunk
	model   []map[string]string     // per node: key → value
	flight  []inFlight
	version uint64
	inPlace int // writes staged as in-place updates
}

type message struct {
	node, j int
	u       Update
	from    int // the data node that made it
}

type ackKey struct {
	from int
	id   ChunkID
	seq  uint32
}

type inFlight struct {
	node  int
	key   string
	value string
	loc   Loc
}

func newProtoSim(t *testing.T, kind scheme.Kind, k, m, size int, seed int64) *protoSim {
	s := &protoSim{t: t, rng: rand.New(rand.NewSource(seed)), k: k, m: m, n: k + m, np: m, size: size, acks: map[ackKey]map[int]bool{}, sums: map[ChunkID][]byte{}}
	if kind == scheme.Hybrid {
		s.hybrid, s.np = true, m-1
	}
	for i := 0; i < s.n; i++ {
		d, err := NewData(size)
		if err != nil {
			t.Fatal(err)
		}
		var slots []Slot
		for p := 0; p < k; p++ {
			slots = append(slots, Slot{List: uint16((i - p + s.n) % s.n), Position: uint8(p)})
		}
		d.SetSlots(slots)
		p, err := holderParity(scheme.Spec{Kind: kind, K: k, M: m, Chunk: size})
		if err != nil {
			t.Fatal(err)
		}
		s.data, s.parity = append(s.data, d), append(s.parity, p)
		s.model = append(s.model, map[string]string{})
	}
	return s
}

// holder is the node at parity position j of list g.
func (s *protoSim) holder(g uint16, j int) int { return (int(g) + s.k + j) % s.n }

// dataNode is the node at data position p of list g.
func (s *protoSim) dataNode(g uint16, p int) int { return (int(g) + p) % s.n }

// send queues ups for their holders, checking that the deltas are exactly
// the changes their chunks went through: a chunk in use equals the XOR of
// every delta sent for it.
func (s *protoSim) send(from int, ups []Update) {
	for _, u := range ups {
		if u.Kind == Delta {
			sum := s.sums[u.Chunk]
			if sum == nil {
				sum = make([]byte, s.size)
				s.sums[u.Chunk] = sum
			}
			xorInto(sum[u.Offset:], u.Bytes)
		}
	}
	for _, u := range ups {
		// Read gives a chunk with its staged in-place deltas, as sent.
		if cur, _, _, held := s.data[from].Read(u.Chunk); held && !bytes.Equal(cur, s.sums[u.Chunk]) {
			s.t.Fatalf("after %s node %d's chunk differs from the XOR of its deltas", u, from)
		}
	}
	for _, u := range append(ups, s.data[from].TakeMarks(nil)...) {
		for j := 0; j < s.m; j++ {
			s.net = append(s.net, message{node: s.holder(u.Chunk.List, j), j: j, u: u, from: from})
		}
	}
}

// deliver hands one queued update, chosen at random, to its holder; now
// and then it stays queued as well (a duplicate).
func (s *protoSim) deliver() {
	i := s.rng.Intn(len(s.net))
	msg := s.net[i]
	if s.rng.Intn(10) != 0 {
		s.net[i] = s.net[len(s.net)-1]
		s.net = s.net[:len(s.net)-1]
	}
	out, through, err := s.parity[msg.node].Apply(msg.j, msg.u)
	if err != nil {
		s.t.Fatalf("node %d applying %s from node %d: %v", msg.node, msg.u, msg.from, err)
	}
	if out == Missing {
		// Send again what the holder lacks, then this.
		ups, complete := s.data[msg.from].Since(msg.u.Chunk, through)
		if !complete {
			s.t.Fatalf("%s: the log lacks updates after %d that holder %d needs", msg.u.Chunk, through, msg.j)
		}
		for _, u := range ups {
			s.net = append(s.net, message{node: msg.node, j: msg.j, u: u, from: msg.from})
		}
		return
	}
	if msg.u.Kind == Stable {
		return // a mark is not an update: nothing to acknowledge
	}
	key := ackKey{msg.from, msg.u.Chunk, msg.u.Seq}
	if s.acks[key] == nil {
		s.acks[key] = map[int]bool{}
	}
	s.acks[key][msg.j] = true
	if len(s.acks[key]) == s.m {
		s.data[msg.from].Acked(msg.u.Chunk, msg.u.Seq)
	}
}

// step does one random thing: write a key (left in flight), settle a write
// in flight, delete a key, or deliver an update.
func (s *protoSim) step() {
	switch r := s.rng.Intn(100); {
	case r < 30:
		s.write()
	case r < 50 && len(s.flight) > 0:
		s.settle(s.rng.Intn(len(s.flight)))
	case r < 60:
		s.del()
	case len(s.net) > 0:
		s.deliver()
	}
}

func (s *protoSim) write() {
	node := s.rng.Intn(s.n)
	key := fmt.Sprintf("n%d:key:%d", node, s.rng.Intn(40))
	for _, f := range s.flight {
		if f.key == key {
			return // one write of a key at a time, as the coordinator ensures
		}
	}
	s.version++
	size := s.rng.Intn(s.size / 4)
	switch s.rng.Intn(20) {
	case 0:
		size = s.size + s.rng.Intn(2*s.size) // larger than a chunk: fragments
	case 1, 2, 3, 4, 5, 6, 7, 8, 9:
		size = 10 // the same size as other writes of the key: updated in place
	}
	value := bytes.Repeat([]byte{byte('a' + s.rng.Intn(26))}, size)
	o := Object{Key: []byte(key), Value: value, Version: s.version}
	if s.rng.Intn(5) == 0 {
		o.ExpireAt = 1_700_000_000_000 + int64(s.rng.Intn(1000))
	}
	loc, ups, inPlace := s.data[node].Update(o.Key, &o)
	if inPlace {
		s.inPlace++
	} else {
		var err error
		if loc, ups, err = s.data[node].Append(&o); err != nil {
			s.t.Fatalf("append %s: %v", o, err)
		}
	}
	s.send(node, ups)
	s.flight = append(s.flight, inFlight{node: node, key: key, value: string(value), loc: loc})
}

// settle commits a write in flight, or aborts one in eight.
func (s *protoSim) settle(i int) {
	f := s.flight[i]
	s.flight = append(s.flight[:i], s.flight[i+1:]...)
	d := s.data[f.node]
	if s.rng.Intn(8) == 0 {
		ups, err := d.Abort(f.loc)
		if err != nil {
			s.t.Fatalf("abort %s: %v", f.key, err)
		}
		s.send(f.node, ups)
		return
	}
	applied, _, ups, err := d.Commit([]byte(f.key), f.loc)
	if err != nil || !applied {
		s.t.Fatalf("commit %s: applied %v, %v", f.key, applied, err)
	}
	s.model[f.node][f.key] = f.value
	s.send(f.node, ups)
}

func (s *protoSim) del() {
	node := s.rng.Intn(s.n)
	key := fmt.Sprintf("n%d:key:%d", node, s.rng.Intn(40))
	for _, f := range s.flight {
		if f.key == key {
			return
		}
	}
	ok, ups, err := s.data[node].Delete([]byte(key), s.version)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, want := s.model[node][key]; ok != want {
		s.t.Fatalf("delete %s: %v, the model has it: %v", key, ok, want)
	}
	delete(s.model[node], key)
	s.send(node, ups)
}

// drain settles every write and delivers every update, then the Stable
// marks the acknowledgements queued, after which no holder may keep a
// backup.
func (s *protoSim) drain() {
	for len(s.flight) > 0 {
		s.settle(0)
	}
	for len(s.net) > 0 {
		s.deliver()
	}
	for i, d := range s.data {
		s.send(i, nil)
		if d.HasMarks() {
			s.t.Fatalf("node %d has marks after sending them", i)
		}
	}
	for len(s.net) > 0 {
		s.deliver()
	}
	for i, p := range s.parity {
		if b := p.Stats().BackupBytes; b != 0 {
			s.t.Fatalf("node %d keeps %d bytes of backups once every update is acknowledged and marked", i, b)
		}
		for key, st := range p.stripes {
			for q := range st.pos {
				if bs := st.pos[q].backups; len(bs) > 0 {
					s.t.Fatalf("node %d keeps backups of stripe %d/%d position %d: %v", i, key.list, key.stripe, q, bs)
				}
			}
		}
	}
}

// check compares every node's objects with the model, every parity chunk
// with a full encode of its stripe's sealed chunks, every open chunk with
// its holders' copies and, for hybrid, every sealed chunk with its
// replica holder's copy, decodes each sealed data chunk from the others
// and parity, and checks that no update is left unacknowledged.
func (s *protoSim) check() {
	s.t.Helper()
	for i, d := range s.data {
		for key, want := range s.model[i] {
			o, ok := d.Get([]byte(key))
			if !ok || string(o.Value) != want {
				s.t.Fatalf("node %d: %s = %q (%v), want %q", i, key, o.Value, ok, want)
			}
		}
		if d.index.Len() != len(s.model[i]) {
			s.t.Fatalf("node %d indexes %d keys, the model has %d", i, d.index.Len(), len(s.model[i]))
		}
	}
	codec, _ := ec.New(s.k, s.np)
	stripes := map[stripeKey][][]byte{}
	for i, d := range s.data {
		d.Chunks(func(id ChunkID, b []byte, sealed bool) {
			if left := d.Unacked(); len(left) > 0 {
				s.t.Fatalf("node %d: %s still logs %v", i, id, left)
			}
			if !sealed {
				for j := 0; j < s.m; j++ {
					if img := s.parity[s.holder(id.List, j)].Image(id); !bytes.Equal(img, b) && !(img == nil && isZero(b)) {
						s.t.Fatalf("%s: parity holder %d's copy differs from node %d's chunk", id, j, i)
					}
				}
				return
			}
			if s.hybrid && !bytes.Equal(s.parity[s.holder(id.List, s.m-1)].Image(id), b) {
				s.t.Fatalf("%s: the replica holder's copy differs from node %d's sealed chunk", id, i)
			}
			key := stripeKey{id.List, id.Stripe}
			if stripes[key] == nil {
				stripes[key] = make([][]byte, s.k+s.np)
			}
			stripes[key][id.Position] = bytes.Clone(b)
		})
	}
	for key, shards := range stripes {
		for p := 0; p < s.k; p++ {
			if shards[p] == nil {
				shards[p] = make([]byte, s.size) // open or unused: virtual zeros
			}
		}
		want := make([][]byte, s.k+s.np)
		copy(want, shards)
		for j := 0; j < s.np; j++ {
			want[s.k+j] = make([]byte, s.size)
		}
		if err := codec.Encode(want); err != nil {
			s.t.Fatal(err)
		}
		for j := 0; j < s.np; j++ {
			got, pj := s.parity[s.holder(key.list, j)].ParityChunk(key.list, key.stripe)
			if pj != j || !bytes.Equal(got, want[s.k+j]) {
				s.t.Fatalf("stripe %d/%d: parity %d differs from a full encode", key.list, key.stripe, j)
			}
			shards[s.k+j] = got
		}
		s.decodeEach(codec, key, shards)
	}
}

// decodeEach rebuilds each data chunk of a stripe from the others and
// parity, as a degraded read does.
func (s *protoSim) decodeEach(codec *ec.Codec, key stripeKey, shards [][]byte) {
	for lost := 0; lost < s.k; lost++ {
		work := make([][]byte, len(shards))
		for i := range shards {
			if i != lost {
				work[i] = bytes.Clone(shards[i])
			}
		}
		if err := codec.ReconstructData(work); err != nil {
			s.t.Fatal(err)
		}
		if !bytes.Equal(work[lost], shards[lost]) {
			s.t.Fatalf("stripe %d/%d: position %d decodes wrong", key.list, key.stripe, lost)
		}
	}
}

func isZero(b []byte) bool { return !bytes.ContainsFunc(b, func(r rune) bool { return r != 0 }) }

// TestProtocolKeepsParityExact runs random writes (appends, in-place
// updates of objects of the same size, and objects larger than a chunk,
// in fragments), aborts and deletes over
// every scheme shape and both chunk sizes of issue 6 with updates delayed,
// reordered and duplicated, and checks the model and every stripe after
// draining, several times per run. The hybrid shapes check in addition
// that the replica holder's copy of every sealed chunk equals the chunk
// and that RS(K, M−1) parity equals a full re-encode (decision 0008).
func TestProtocolKeepsParityExact(t *testing.T) {
	shapes := []struct {
		kind scheme.Kind
		k, m int
	}{{scheme.Stripe, 2, 1}, {scheme.Stripe, 3, 1}, {scheme.Stripe, 4, 2}, {scheme.Stripe, 3, 2},
		{scheme.Hybrid, 2, 2}, {scheme.Hybrid, 3, 2}, {scheme.Hybrid, 4, 2}, {scheme.Hybrid, 3, 3}}
	for _, shape := range shapes {
		for _, size := range []int{256, 4096} {
			t.Run(fmt.Sprintf("%s:%d+%d/%dB", shape.kind, shape.k, shape.m, size), func(t *testing.T) {
				s := newProtoSim(t, shape.kind, shape.k, shape.m, size, int64(size*10+shape.k))
				for round := 0; round < 4; round++ {
					for i := 0; i < 3000; i++ {
						s.step()
					}
					s.drain()
					s.check()
				}
				var sealed, freed int
				for _, p := range s.parity {
					sealed += p.Stats().Stripes
				}
				for _, d := range s.data {
					for _, nums := range d.lists {
						freed += len(nums.free)
					}
				}
				fragmented := 0
				for _, d := range s.data {
					fragmented += len(d.frags)
				}
				if sealed == 0 || freed == 0 || s.inPlace == 0 || fragmented == 0 {
					t.Fatalf("the run sealed %d stripes, freed %d chunks, updated %d objects in place and left %d fragmented: it did not cover all four",
						sealed, freed, s.inPlace, fragmented)
				}
			})
		}
	}
}

// TestParityRefusesBadUpdates: malformed updates are refused and change
// nothing.
func TestParityRefusesBadUpdates(t *testing.T) {
	p, err := NewParity(3, 2, 256)
	if err != nil {
		t.Fatal(err)
	}
	id := ChunkID{List: 1, Position: 2, Stripe: 7}
	obj := Object{Key: []byte("k"), Value: []byte("v"), Version: 1}
	good := Update{Chunk: id, Seq: 1, Kind: Delta, Bytes: obj.AppendTo(nil)}
	bad := map[string]struct {
		j int
		u Update
	}{
		"parity position out of range": {2, good},
		"data position out of range":   {0, Update{Chunk: ChunkID{Position: 3}, Seq: 1, Kind: Delta, Bytes: []byte{1}}},
		"seq 0":                        {0, Update{Chunk: id, Kind: Delta, Bytes: []byte{1}}},
		"base not before seq":          {0, Update{Chunk: id, Seq: 2, Base: 2, Kind: Delta, Bytes: []byte{1}}},
		"delta past the chunk":         {0, Update{Chunk: id, Seq: 1, Kind: Delta, Offset: 250, Bytes: make([]byte, 7)}},
		"empty delta":                  {0, Update{Chunk: id, Seq: 1, Kind: Delta}},
		"negative offset":              {0, Update{Chunk: id, Seq: 1, Kind: Delta, Offset: -1, Bytes: []byte{1}}},
		"unknown kind":                 {0, Update{Chunk: id, Seq: 1, Kind: 9}},
	}
	for name, c := range bad {
		if _, _, err := p.Apply(c.j, c.u); !errors.Is(err, ErrUpdate) {
			t.Errorf("%s: %v, want ErrUpdate", name, err)
		}
	}
	if st := p.Stats(); st != (ParityStats{}) {
		t.Fatalf("refused updates left state behind: %+v", st)
	}
	if out, _, err := p.Apply(0, good); out != Applied || err != nil {
		t.Fatalf("a good delta: %s, %v", out, err)
	}
	if _, _, err := p.Apply(1, Update{Chunk: id, Seq: 2, Kind: Delta, Bytes: []byte{1}}); !errors.Is(err, ErrUpdate) {
		t.Errorf("the stripe held as parity 0 took an update as parity 1: %v", err)
	}
	if out, through, err := p.Apply(0, Update{Chunk: id, Seq: 3, Kind: Seal}); out != Missing || through != 1 || err != nil {
		t.Errorf("a seal ahead of seq 2: %s through %d, %v; want missing through 1", out, through, err)
	}
	if _, _, err := p.Apply(0, Update{Chunk: id, Seq: 2, Kind: Free}); !errors.Is(err, ErrUpdate) {
		t.Errorf("freeing a chunk with an object in it: %v", err)
	}
	if _, _, err := p.Apply(0, Update{Chunk: id, Seq: 2, Kind: Seal, CRC: 1}); !errors.Is(err, ErrCopyDiffers) {
		t.Errorf("a seal with another checksum: %v", err)
	}
	if out, _, err := p.Apply(0, good); out != Duplicate || err != nil {
		t.Errorf("a repeated delta: %s, %v", out, err)
	}
	chunk := make([]byte, 256)
	copy(chunk[10:], good.Bytes)
	if out, err := p.Resync(0, id, 5, chunk, false); out != Applied || err != nil {
		t.Fatalf("resync: %s, %v", out, err)
	}
	if !bytes.Equal(p.Image(id), chunk) || p.Applied(id) != 5 {
		t.Fatalf("Resync did not replace the copy and its seq")
	}
	if out, err := p.Resync(0, id, 4, make([]byte, 256), true); out != Duplicate || err != nil {
		t.Fatalf("an older resync: %s, %v", out, err)
	}
	if out, err := p.Resync(0, id, 6, chunk, true); out != Applied || err != nil {
		t.Fatalf("resync of the sealed chunk: %s, %v", out, err)
	}
	if out, err := p.Resync(0, id, 7, chunk, true); out != Missing || err != nil || p.Applied(id) != 6 {
		t.Fatalf("a second sealed resync: %s, %v, applied through %d; want missing through 6", out, err, p.Applied(id))
	}
	if through, sealed := p.StripeState(1, 7); through[2] != 6 || !sealed[2] {
		t.Fatalf("stripe state %v %v", through, sealed)
	}
	if ps := p.Positions(1, 2); len(ps) != 1 || ps[0].Stripe != 7 || ps[0].Through != 6 || !ps[0].Sealed || ps[0].Open {
		t.Fatalf("positions %+v", ps)
	}
}

// TestDataRefusals: a key too large to fragment, a store with no data
// position, and a commit that loses to a newer version.
func TestDataRefusals(t *testing.T) {
	d, err := NewData(128)
	if err != nil {
		t.Fatal(err)
	}
	small := Object{Key: []byte("k"), Value: []byte("v"), Version: 2}
	if _, _, err := d.Append(&small); !errors.Is(err, ErrNoList) {
		t.Fatalf("append with no slot: %v", err)
	}
	d.SetSlots([]Slot{{List: 3, Position: 1}})
	big := Object{Key: make([]byte, 100), Value: make([]byte, 128), Version: 3}
	if _, _, err := d.Append(&big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("append of an object whose key leaves no room for fragments: %v", err)
	}
	newer, _, err := d.Append(&small)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _, err := d.Commit(small.Key, newer); !ok || err != nil {
		t.Fatalf("commit: %v, %v", ok, err)
	}
	older := Object{Key: []byte("k"), Value: []byte("old"), Version: 1}
	loc, _, err := d.Append(&older)
	if err != nil {
		t.Fatal(err)
	}
	ok, prev, ups, err := d.Commit(older.Key, loc)
	if ok || prev != 2 || err != nil || len(ups) != 1 || ups[0].Kind != Delta {
		t.Fatalf("an older commit: applied %v over version %d, %v, updates %v", ok, prev, err, ups)
	}
	if o, _ := d.Get(small.Key); string(o.Value) != "v" {
		t.Fatalf("the older commit replaced the newer object: %q", o.Value)
	}
	if st := d.Stats(); st.Keys != 1 || st.LogicalBytes != 2 || st.OpenChunks != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestBackupsEqualizeHolders: a coordinator fails after its updates of a
// sealed chunk reached its two parity holders only in part, each holder a
// different part. Giving each holder the other's backups (PositionBackups) brings
// both to the same updates, so that both parities encode the chunk as the
// coordinator last had it and a decode may use either; a Stable mark then
// drops the backups.
func TestBackupsEqualizeHolders(t *testing.T) {
	const k, m, size = 2, 2, 256 // newListOfTwo's
	d, holders := newListOfTwo(t)
	deliver := func(to []int, ups []Update) {
		t.Helper()
		for _, j := range to {
			for _, u := range ups {
				if out, _, err := holders[j].Apply(j, u); err != nil || out == Missing {
					t.Fatalf("holder %d applying %s: %v %v", j, u, out, err)
				}
			}
		}
	}
	ack := func(ups []Update) {
		for _, u := range ups {
			d.Acked(u.Chunk, u.Seq)
		}
	}
	var keys [][]byte
	for i := 0; len(d.open) == 0 || d.chunks[0].chunk.Free() > 40; i++ { // fill chunk 0
		o := Object{Key: fmt.Appendf(nil, "k%02d", i), Value: []byte("0123456789"), Version: uint64(i + 1)}
		loc, ups, err := d.Append(&o)
		must(t, err)
		_, _, more, err := d.Commit(o.Key, loc)
		must(t, err)
		deliver([]int{0, 1}, append(ups, more...))
		ack(append(ups, more...))
		keys = append(keys, o.Key)
	}
	first := d.chunks[0].id
	c := d.chunks[0]
	seal := d.close(c)
	deliver([]int{0, 1}, seal)
	ack(seal)
	deliver([]int{0, 1}, d.TakeMarks(nil))
	if b := holders[0].PositionBackups(0, 0); len(b) != 0 {
		t.Fatalf("backups after every update was marked stable: %v", b)
	}
	// Three deletions from the sealed chunk: holder 0 gets the first two,
	// holder 1 only the third; then the coordinator is gone.
	var dels [][]Update
	for _, key := range keys[:3] {
		_, ups, err := d.Delete(key, 1<<40)
		must(t, err)
		dels = append(dels, ups)
	}
	deliver([]int{0}, append(dels[0], dels[1]...))
	deliver([]int{1}, dels[2])
	p0, _ := holders[0].ParityChunk(0, first.Stripe)
	p1, _ := holders[1].ParityChunk(0, first.Stripe)
	codec, _ := ec.New(k, m)
	want := [][]byte{bytes.Clone(c.chunk.Bytes()), make([]byte, size), make([]byte, size), make([]byte, size)}
	must(t, codec.Encode(want))
	if bytes.Equal(p0, want[2]) || bytes.Equal(p1, want[3]) {
		t.Fatal("a holder's parity already encodes every deletion")
	}
	union := append(slices.Clone(holders[0].PositionBackups(0, 0)), holders[1].PositionBackups(0, 0)...)
	for j := range holders {
		for _, u := range union {
			if _, _, err := holders[j].Apply(j, u); err != nil {
				t.Fatalf("holder %d replaying %s: %v", j, u, err)
			}
		}
	}
	p0, _ = holders[0].ParityChunk(0, first.Stripe)
	p1, _ = holders[1].ParityChunk(0, first.Stripe)
	if !bytes.Equal(p0, want[2]) || !bytes.Equal(p1, want[3]) {
		t.Fatal("after the replay the parities do not encode the chunk as the coordinator left it")
	}
	if th0, th1 := holders[0].Applied(first), holders[1].Applied(first); th0 != th1 {
		t.Fatalf("holders at seqs %d and %d after the replay", th0, th1)
	}
	for j := range holders {
		if _, _, err := holders[j].Apply(j, Update{Chunk: first, Seq: holders[j].Applied(first), Kind: Stable}); err != nil {
			t.Fatal(err)
		}
		if b := holders[j].PositionBackups(0, 0); len(b) != 0 || holders[j].Stats().BackupBytes != 0 {
			t.Fatalf("holder %d keeps backups after a mark through its last seq: %v", j, b)
		}
	}
}

// TestResyncCarriesStagedInPlaceDeltas: a holder resynced while an
// in-place update is staged (its delta counted in the chunk's seq, the
// chunk itself unchanged until commit) must end with the chunk as the
// coordinator has it, whether the write then commits or aborts. A Resync
// of the committed bytes left the holder one delta short for good (the
// robustness suite's "copy of open chunk differs" after a node rejoined).
func TestResyncCarriesStagedInPlaceDeltas(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			const k, m, size = 2, 1, 256
			d, err := NewData(size)
			must(t, err)
			d.SetSlots([]Slot{{List: 0, Position: 0}})
			holder, err := NewParity(k, m, size)
			must(t, err)
			apply := func(ups []Update) {
				t.Helper()
				for _, u := range ups {
					if out, _, err := holder.Apply(0, u); err != nil || out == Missing {
						t.Fatalf("applying %s: %v %v", u, out, err)
					}
				}
			}
			o := Object{Key: []byte("k"), Value: []byte("old value"), Version: 1}
			loc, ups, err := d.Append(&o)
			must(t, err)
			_, _, more, err := d.Commit(o.Key, loc)
			must(t, err)
			apply(append(ups, more...))

			n := Object{Key: []byte("k"), Value: []byte("new value"), Version: 2}
			loc, staged, inPlace := d.Update(n.Key, &n)
			if !inPlace {
				t.Fatal("a same-size update was not staged in place")
			}
			id := staged[0].Chunk
			// The holder lost its state (it rejoined empty) and the delta
			// went to it before the resync reached it.
			holder, err = NewParity(k, m, size)
			must(t, err)
			apply(staged)
			whole, ok := d.Resync(id)
			if !ok {
				t.Fatal("no resync for a held chunk")
			}
			apply([]Update{whole})
			var after []Update
			if commit {
				_, _, after, err = d.Commit(n.Key, loc)
			} else {
				after, err = d.Abort(loc)
			}
			must(t, err)
			apply(after)
			local, _, _, _ := d.Read(id)
			if !bytes.Equal(holder.Image(id), local) {
				t.Fatal("the resynced holder's copy differs from the chunk")
			}
			if got, _ := d.Get(n.Key); commit != bytes.Equal(got.Value, n.Value) {
				t.Fatalf("after the write the key holds %q", got.Value)
			}
		})
	}
}

// TestReassignDropsTheOldPosition: a holder made another parity position
// of a list drops what it kept as the old one, and its accounting with it,
// and then takes the new position's updates; other lists are kept.
func TestReassignDropsTheOldPosition(t *testing.T) {
	const k, m, size = 2, 2, 256
	d, err := NewData(size)
	must(t, err)
	p, err := NewParity(k, m, size)
	must(t, err)
	apply := func(j int, ups []Update) {
		t.Helper()
		for _, u := range ups {
			if out, _, err := p.Apply(j, u); err != nil || out == Missing {
				t.Fatalf("applying %s as %d: %v %v", u, j, out, err)
			}
		}
	}
	var ids []ChunkID
	for list := range uint16(2) {
		d.SetSlots([]Slot{{List: list, Position: 0}})
		o := Object{Key: fmt.Appendf(nil, "k%d", list), Value: make([]byte, 200), Version: uint64(list + 1)}
		_, ups, err := d.Append(&o)
		must(t, err)
		apply(0, ups)
		ids = append(ids, ups[0].Chunk)
	}
	if _, _, err := p.Apply(1, Update{Chunk: ids[0], Seq: 9, Kind: Delta, Bytes: []byte{1}}); !errors.Is(err, ErrUpdate) {
		t.Fatalf("an update as another position before Reassign: %v", err)
	}
	if n := p.Reassign(0, 1); n != 1 {
		t.Fatalf("Reassign dropped %d stripes, want 1", n)
	}
	if st := p.Stats(); st.Stripes != 1 || st.ImageBytes != size || st.BackupBytes == 0 {
		t.Fatalf("after Reassign: %+v; want list 1's stripe alone", st)
	}
	whole, _ := d.Resync(ids[0])
	apply(1, []Update{whole})
	if j, _ := p.HeldAs(0, ids[0].Stripe); j != 1 {
		t.Fatalf("list 0's stripe held as %d", j)
	}
	if j, _ := p.HeldAs(1, ids[1].Stripe); j != 0 {
		t.Fatalf("list 1's stripe held as %d", j)
	}
}

// TestManifestNamesASealedChunksKeys: the list's first parity holder
// keeps the tags of a sealed chunk's keys, the others keep none, and a
// freed chunk's manifest goes with it.
func TestManifestNamesASealedChunksKeys(t *testing.T) {
	d, holders := newListOfTwo(t)
	apply := func(ups []Update) {
		t.Helper()
		for _, u := range ups {
			for j, h := range holders {
				if out, _, err := h.Apply(j, u); err != nil || out == Missing {
					t.Fatalf("applying %s as %d: %v %v", u, j, out, err)
				}
			}
		}
	}
	var sealed *ChunkID
	versions := map[string]uint64{}
	for i := 0; sealed == nil; i++ {
		o := Object{Key: fmt.Appendf(nil, "key%02d", i), Value: make([]byte, 40), Version: uint64(i + 1)}
		loc, ups, err := d.Append(&o)
		must(t, err)
		_, _, more, err := d.Commit(o.Key, loc)
		must(t, err)
		apply(append(ups, more...))
		versions[string(o.Key)] = o.Version
		for _, u := range ups {
			if u.Kind == Seal {
				sealed = &u.Chunk
			}
		}
	}
	chunk, _, _, _ := d.Read(*sealed)
	var want []uint32
	var keys []string
	must(t, Scan(chunk, func(_ int, o Object) bool {
		want, keys = append(want, keyslot.Tag(o.Key)), append(keys, string(o.Key))
		return true
	}))
	manifest := func(j int) (PositionState, bool) {
		for _, ps := range holders[j].Positions(sealed.List, sealed.Position) {
			if ps.Stripe == sealed.Stripe {
				return ps, true
			}
		}
		return PositionState{}, false
	}
	first, _ := manifest(0)
	var got []uint32
	Tags(first.Manifest, func(tag uint32) { got = append(got, tag) })
	if !first.HasManifest || !reflect.DeepEqual(got, want) {
		t.Fatalf("the first holder's manifest: %v %v, want the tags %v", first.HasManifest, got, want)
	}
	for i, tag := range got {
		if keyslot.TagSlot(tag) != keyslot.Of([]byte(keys[i])) {
			t.Fatalf("tag %#x of %q carries slot %d", tag, keys[i], keyslot.TagSlot(tag))
		}
	}
	if second, _ := manifest(1); second.HasManifest || second.Manifest != nil {
		t.Fatalf("the second holder keeps a manifest: %+v", second)
	}
	if st := holders[0].Stats(); st.ManifestBytes != len(keys)*TagBytes {
		t.Fatalf("ManifestBytes %d, want %d", st.ManifestBytes, len(keys)*TagBytes)
	}
	for _, key := range keys {
		_, ups, err := d.Delete([]byte(key), versions[key])
		must(t, err)
		apply(ups)
	}
	if ps, held := manifest(0); held && ps.HasManifest {
		t.Fatalf("a freed chunk keeps its manifest: %+v", ps)
	}
	if st := holders[0].Stats(); st.ManifestBytes != 0 {
		t.Fatalf("ManifestBytes %d after the chunk was freed", st.ManifestBytes)
	}
}

// newListOfTwo returns the data of position 0 of list 0 of RS(2, 2)
// stripes of 256-byte chunks, and the list's two parity holders.
func newListOfTwo(t *testing.T) (*Data, []*Parity) {
	t.Helper()
	const k, m, size = 2, 2, 256
	d, err := NewData(size)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	holders := make([]*Parity, m)
	for j := range holders {
		holders[j], err = NewParity(k, m, size)
		must(t, err)
	}
	return d, holders
}

// TestStaleMissingThenResyncOfASealedChunk: a holder reports an update
// Missing (it overtook the seal before it); the seal then arrives and
// every holder acknowledges it, so the log no longer has it when the
// sender reads the stale reply and sends the whole chunk (Resync). The
// sealed holder cannot take its contribution back, so it answers with how
// far it is (Missing through the seal) instead of refusing, and the
// logged updates after it bring it up to date.
func TestStaleMissingThenResyncOfASealedChunk(t *testing.T) {
	const k, m, size = 2, 1, 256
	d, err := NewData(size)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	var all []Update
	var seal Update
	for i := 0; seal.Kind != Seal; i++ {
		o := Object{Key: fmt.Appendf(nil, "key%d", i), Value: bytes.Repeat([]byte{'v'}, 40), Version: 1}
		loc, ups, err := d.Append(&o)
		must(t, err)
		_, _, more, err := d.Commit(o.Key, loc)
		must(t, err)
		for _, u := range append(ups, more...) {
			all = append(all, u)
			if u.Kind == Seal {
				seal = u
			}
		}
	}
	id := seal.Chunk
	var victim []byte // a key in the sealed chunk
	for i := 0; victim == nil; i++ {
		if at, _, ok := d.Locate(fmt.Appendf(nil, "key%d", i)); ok && at == id {
			victim = fmt.Appendf(nil, "key%d", i)
		}
	}
	_, del, err := d.Delete(victim, 1)
	must(t, err)
	if del[0].Chunk != id || del[0].Seq != seal.Seq+1 {
		t.Fatalf("the delete is %s, want the update after %s", del[0], seal)
	}

	ref, err := NewParity(k, m, size)
	must(t, err)
	holder, err := NewParity(k, m, size)
	must(t, err)
	apply := func(p *Parity, u Update, want Outcome, through uint32) {
		t.Helper()
		out, th, err := p.Apply(0, u)
		if err != nil || out != want || want == Missing && th != through {
			t.Fatalf("applying %s: %s through %d, %v; want %s (through %d)", u, out, th, err, want, through)
		}
	}
	for _, u := range append(all, del...) {
		apply(ref, u, Applied, 0)
		if u.Chunk != id || u.Seq < seal.Seq {
			apply(holder, u, Applied, 0)
		}
	}
	apply(holder, del[0], Missing, seal.Seq-1) // overtook the seal
	apply(holder, seal, Applied, 0)
	for _, u := range all {
		d.Acked(u.Chunk, u.Seq) // the seal's round settled first
	}
	stale := d.CatchUp(id, seal.Seq-1)
	if len(stale) != 1 || stale[0].Kind != Resync {
		t.Fatalf("catching up from the stale reply gave %v, want a Resync", stale)
	}
	apply(holder, stale[0], Missing, seal.Seq)
	for _, u := range d.CatchUp(id, seal.Seq) {
		apply(holder, u, Applied, 0)
	}
	got, _ := holder.ParityChunk(id.List, id.Stripe)
	want, _ := ref.ParityChunk(id.List, id.Stripe)
	if !bytes.Equal(got, want) {
		t.Fatal("the holder's parity differs from one that applied every update in order")
	}
}

// Resendable gives an unacknowledged update again only once a resend
// has passed since it was logged and while no round carries it
// (Sending), so that a resend does not double a huge object's updates
// while they are on their way.
func TestResendableLeavesOutUpdatesInFlight(t *testing.T) {
	d, err := NewData(128)
	if err != nil {
		t.Fatal(err)
	}
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	o := Object{Key: []byte("huge"), Value: make([]byte, 1000), Version: 1}
	_, ups, err := d.Append(&o)
	if err != nil || len(ups) < 2 {
		t.Fatalf("append: %d updates, %v", len(ups), err)
	}
	if got := d.Resendable(); len(got) != 0 {
		t.Fatalf("%d updates to resend just after they were logged", len(got))
	}
	inFlight, later := ups[:len(ups)/2], ups[len(ups)/2:]
	d.Sending(inFlight, 1)
	if got := d.Resendable(); len(got) != len(later) {
		t.Fatalf("%d updates to resend, want the %d not in flight", len(got), len(later))
	}
	d.Sending(inFlight, -1)
	if got := d.Resendable(); len(got) != len(ups) {
		t.Fatalf("%d updates to resend once the round is over, want %d", len(got), len(ups))
	}
	if got := d.Unacked(); len(got) != len(ups) {
		t.Fatalf("%d unacked updates, want %d", len(got), len(ups))
	}
}
