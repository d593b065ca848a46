package stripe

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/memgest/memgest/ec"
)

func TestObjectRoundTrips(t *testing.T) {
	objects := []Object{
		{Key: []byte("k"), Value: []byte("v"), Version: 1},
		{Key: []byte("user:0000000000000000001"), Value: []byte{}, Version: 1 << 63},
		{Key: bytes.Repeat([]byte("k"), 300), Value: bytes.Repeat([]byte("v"), 70000), Version: 7, ExpireAt: 1_700_000_000_000},
		{Key: []byte("big"), Value: []byte("middle"), Version: 9, Fragment: true, Offset: 4096, Total: 1 << 20},
		{Key: []byte{}, Value: []byte("empty key"), Version: 3, ExpireAt: -1},
	}
	for _, o := range objects {
		b := o.AppendTo([]byte("prefix"))[len("prefix"):]
		if len(b) != o.EncodedLen() {
			t.Fatalf("%s: encoded %d bytes, EncodedLen says %d", o, len(b), o.EncodedLen())
		}
		got, n, err := ParseChecked(append(b, 0, 0, 0))
		if err != nil || n != len(b) {
			t.Fatalf("%s: parse: %v, %d of %d bytes", o, err, n, len(b))
		}
		if got.CRC == 0 {
			t.Fatalf("%s: parsed with no checksum", o)
		}
		o.CRC = got.CRC
		if !reflect.DeepEqual(got, o) {
			t.Fatalf("parsed %+v, want %+v", got, o)
		}
	}
}

// TestChecksumCatchesEveryFlippedBit: a bit flipped anywhere in an
// object's encoding — header, checksum, key or value — fails its check
// (DESIGN.md §4 "Corruption"; KVMD §3.2: every stored piece carries a
// checksum read paths verify), though Parse alone may still accept it.
func TestChecksumCatchesEveryFlippedBit(t *testing.T) {
	for _, o := range []Object{
		{Key: []byte("key"), Value: []byte("value"), Version: 5, ExpireAt: 99, Fragment: true, Offset: 1, Total: 6},
		{Key: []byte("user:1"), Value: bytes.Repeat([]byte{0xA5}, 300), Version: 1 << 40},
	} {
		full := o.AppendTo(nil)
		if err := Verify(full); err != nil {
			t.Fatalf("%s: intact object fails its check: %v", o, err)
		}
		for i := range full {
			for bit := range 8 {
				bad := bytes.Clone(full)
				bad[i] ^= 1 << bit
				if err := Verify(bad); !errors.Is(err, ErrChecksum) {
					t.Fatalf("%s: byte %d bit %d flipped passes its check (%v)", o, i, bit, err)
				}
				if _, _, err := ParseChecked(bad); err == nil {
					t.Fatalf("%s: byte %d bit %d flipped parses checked", o, i, bit)
				}
			}
		}
	}
}

func TestParseRefusesDamage(t *testing.T) {
	o := Object{Key: []byte("key"), Value: []byte("value"), Version: 5, ExpireAt: 99, Fragment: true, Offset: 1, Total: 6}
	full := o.AppendTo(nil)
	for i := range full {
		if _, _, err := Parse(full[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a truncation to %d of %d bytes parsed: %v", i, len(full), err)
		}
	}
	for _, flags := range []byte{0, flagExpiry, 0x80 | flagObject} {
		bad := append([]byte{flags}, full[1:]...)
		if _, _, err := Parse(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flags %#x parsed: %v", flags, err)
		}
	}
	beyond := Object{Key: []byte("k"), Value: []byte("value"), Fragment: true, Offset: 4, Total: 6}
	if _, _, err := Parse(beyond.AppendTo(nil)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a fragment past its total parsed: %v", err)
	}
}

// TestChunkAppendSealAndScan: objects go in until the chunk is full, a
// scan lists the live ones by their bytes alone, and a sealed chunk takes
// no more.
func TestChunkAppendSealAndScan(t *testing.T) {
	c, err := NewChunk(256)
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int
	for i := 0; ; i++ {
		o := &Object{Key: []byte(fmt.Sprintf("key%02d", i)), Value: []byte("0123456789"), Version: uint64(i + 1)}
		off, err := c.Append(o)
		if errors.Is(err, ErrFull) {
			if c.Free() >= o.EncodedLen() {
				t.Fatalf("ErrFull with %d bytes free for a %d-byte object", c.Free(), o.EncodedLen())
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, off)
	}
	if len(offsets) < 5 {
		t.Fatalf("only %d objects of 25 bytes fit in 256", len(offsets))
	}
	if _, err := c.Delete(offsets[1]); err != nil {
		t.Fatal(err)
	}
	var listed []int
	if err := c.Objects(func(off int, o Object) bool { listed = append(listed, off); return true }); err != nil {
		t.Fatal(err)
	}
	want := append([]int{offsets[0]}, offsets[2:]...)
	if !reflect.DeepEqual(listed, want) {
		t.Fatalf("scan listed %v, want %v", listed, want)
	}
	if c.Garbage() != c.Size()-c.Free()-c.Live() || c.Garbage() == 0 {
		t.Fatalf("garbage %d, live %d, free %d", c.Garbage(), c.Live(), c.Free())
	}
	c.Seal()
	if _, err := c.Append(&Object{Key: []byte("x")}); !errors.Is(err, ErrSealed) {
		t.Fatalf("append to a sealed chunk: %v", err)
	}
	loaded, err := Load(bytes.Clone(c.Bytes()))
	if err != nil || loaded.Live() != c.Live() {
		t.Fatalf("reloaded chunk: %v, live %d want %d", err, loaded.Live(), c.Live())
	}
}

// TestDeltasKeepParityEqualToAFullEncode: a stripe's parity, first folded
// from each data chunk as it seals and then updated only by the Changes of
// replaces and deletes, equals a full encode of the chunks as they end up
// (DESIGN.md §8 invariant 3; MemEC §2 and §4.3).
func TestDeltasKeepParityEqualToAFullEncode(t *testing.T) {
	for _, code := range [][2]int{{2, 1}, {3, 1}, {4, 2}, {3, 2}} {
		for _, size := range []int{256, 4096} {
			t.Run(fmt.Sprintf("RS(%d,%d)/%dB", code[0], code[1], size), func(t *testing.T) {
				checkDeltas(t, code[0], code[1], size, rand.New(rand.NewSource(int64(size*code[0]+code[1]))))
			})
		}
	}
}

func checkDeltas(t *testing.T, k, m, size int, rng *rand.Rand) {
	codec, err := ec.New(k, m)
	if err != nil {
		t.Fatal(err)
	}
	chunks := make([]*Chunk, k)
	offsets := make([][]int, k)
	parity := make([][]byte, m)
	for j := range parity {
		parity[j] = make([]byte, size)
	}
	apply := func(i int, ch Change) {
		for j := range parity {
			must(t, codec.UpdateParity(j, i, ch.Delta, parity[j][ch.Offset:ch.Offset+len(ch.Delta)]))
		}
	}
	for i := range chunks {
		chunks[i], _ = NewChunk(size)
		for {
			o := randomObject(rng, size/8)
			off, err := chunks[i].Append(&o)
			if err != nil {
				break
			}
			offsets[i] = append(offsets[i], off)
		}
		chunks[i].Seal()
		apply(i, Change{Offset: 0, Delta: chunks[i].Bytes()}) // fold the sealed chunk: old is zeros
	}
	for step := 0; step < 200; step++ {
		i := rng.Intn(k)
		off := offsets[i][rng.Intn(len(offsets[i]))]
		cur, _, err := chunks[i].At(off)
		if err != nil {
			continue // deleted already
		}
		if rng.Intn(3) == 0 {
			ch, err := chunks[i].Delete(off)
			must(t, err)
			apply(i, ch)
			continue
		}
		next := Object{Key: cur.Key, Value: make([]byte, len(cur.Value)), Version: cur.Version + 1, ExpireAt: cur.ExpireAt}
		rng.Read(next.Value)
		ch, err := chunks[i].Replace(off, &next)
		must(t, err)
		apply(i, ch)
	}
	shards := make([][]byte, k+m)
	for i, c := range chunks {
		shards[i] = bytes.Clone(c.Bytes())
	}
	for j := range parity {
		shards[k+j] = make([]byte, size)
	}
	must(t, codec.Encode(shards))
	for j := range parity {
		if !bytes.Equal(parity[j], shards[k+j]) {
			t.Fatalf("parity %d after deltas differs from a full encode", j)
		}
	}
}

func randomObject(rng *rand.Rand, maxValue int) Object {
	o := Object{Key: []byte(fmt.Sprintf("key-%08d", rng.Intn(1e8))), Value: make([]byte, rng.Intn(maxValue)),
		Version: rng.Uint64()}
	rng.Read(o.Value)
	if rng.Intn(4) == 0 {
		o.ExpireAt = rng.Int63()
	}
	return o
}

func TestReplaceRefusesANewSize(t *testing.T) {
	c, _ := NewChunk(MinChunkSize)
	off, err := c.Append(&Object{Key: []byte("k"), Value: []byte("abc")})
	must(t, err)
	if _, err := c.Replace(off, &Object{Key: []byte("k"), Value: []byte("abcd")}); !errors.Is(err, ErrSizeChanged) {
		t.Fatalf("replace with a longer value: %v", err)
	}
	if _, err := NewChunk(MinChunkSize - 1); err == nil {
		t.Fatal("a chunk below the minimum size was made")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add((&Object{Key: []byte("k"), Value: []byte("v"), Version: 1, ExpireAt: 5}).AppendTo(nil))
	f.Add((&Object{Key: []byte("k"), Value: []byte("v"), Fragment: true, Offset: 2, Total: 9}).AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, n, err := Parse(b)
		if err != nil {
			return
		}
		// The re-encoding computes the checksum afresh: it equals the
		// input but for the checksum field, and the input passes its
		// check exactly when that field was right.
		re := o.AppendTo(nil)
		if n > len(b) || o.EncodedLen() != n || len(re) != n {
			t.Fatalf("parsed %s from %d bytes, re-encodes to %d", o, n, len(re))
		}
		in := bytes.Clone(b[:n])
		sound := bytes.Equal(in[crcAt:fixedHeader], re[crcAt:fixedHeader])
		copy(in[crcAt:fixedHeader], re[crcAt:fixedHeader])
		if !bytes.Equal(in, re) {
			t.Fatalf("parsed %s from %d bytes, re-encodes differently", o, n)
		}
		if (Verify(b[:n]) == nil) != sound {
			t.Fatalf("%s: its check says %v for a checksum field that is right: %v", o, Verify(b[:n]), sound)
		}
		_ = Scan(b, func(int, Object) bool { return true })
		_ = CheckObjects(b)
	})
}

// indexFixture keeps keys where an Index can read them back by location.
type indexFixture struct{ keys [][]byte }

func (f *indexFixture) keyAt(loc Loc) []byte { return f.keys[loc.Chunk] }

// TestIndexAgainstAMap: random puts, updates and deletes over many keys
// agree with a Go map, through several doublings, and the table stays
// compact (MemEC §3.2: 4-way cuckoo hashing).
func TestIndexAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	f := &indexFixture{}
	x := NewIndex(f.keyAt)
	model := map[string]Loc{}
	const n = 50_000
	for i := 0; i < n; i++ {
		f.keys = append(f.keys, []byte(fmt.Sprintf("user:%016d", rng.Int63())))
	}
	for step := 0; step < 3*n; step++ {
		i := rng.Intn(n)
		key := f.keys[i]
		switch rng.Intn(4) {
		case 0:
			if x.Delete(key) != hasKey(model, key) {
				t.Fatalf("step %d: Delete(%s) disagrees with the model", step, key)
			}
			delete(model, string(key))
		default:
			loc := Loc{Chunk: uint32(i), Offset: uint32(rng.Intn(MaxOffset + 1))}
			must(t, x.Put(key, loc))
			model[string(key)] = loc
		}
	}
	if x.Len() != len(model) {
		t.Fatalf("Len %d, model %d", x.Len(), len(model))
	}
	for i, key := range f.keys {
		got, ok := x.Get(key)
		want, in := model[string(key)]
		if ok != in || got != want {
			t.Fatalf("key %d: Get = %v %v, want %v %v", i, got, ok, want, in)
		}
	}
	seen := 0
	x.Range(func(Loc) bool { seen++; return true })
	if seen != len(model) {
		t.Fatalf("Range saw %d entries, want %d", seen, len(model))
	}
	if per := float64(x.Bytes()) / float64(x.Len()); per > 20 {
		t.Fatalf("%.1f bytes per key", per)
	}
	if err := x.Put([]byte("k"), Loc{Offset: MaxOffset + 1}); !errors.Is(err, ErrOffset) {
		t.Fatalf("an offset past 20 bits: %v", err)
	}
}

func hasKey(m map[string]Loc, key []byte) bool { _, ok := m[string(key)]; return ok }

// TestIndexFillsPastNinetyPercent: 4-way cuckoo hashing places keys until
// more than 90% of the slots are used before it must grow.
func TestIndexFillsPastNinetyPercent(t *testing.T) {
	f := &indexFixture{}
	x := NewIndex(f.keyAt)
	best := 0.0
	for i := 0; i < 1<<17; i++ {
		f.keys = append(f.keys, []byte(fmt.Sprintf("k%d", i)))
		before := x.Bytes()
		must(t, x.Put(f.keys[i], Loc{Chunk: uint32(i)}))
		if x.Bytes() != before { // it grew: the table before was full
			best = max(best, float64(i)/float64(before/8))
		}
	}
	if best < 0.9 {
		t.Fatalf("the table grew at %.0f%% occupancy at best", 100*best)
	}
}
