package store

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	metas := []Meta{{}, {Version: math.MaxUint64, ExpireAt: math.MinInt64, Scheme: math.MaxUint16, Flags: math.MaxUint8, Aux: math.MaxUint32}}
	for range 2000 {
		metas = append(metas, Meta{Version: r.Uint64() >> r.IntN(65), ExpireAt: int64(r.Uint64()) >> r.IntN(65),
			Scheme: uint16(r.Uint32() >> r.IntN(33)), Flags: uint8(r.IntN(2)), Aux: r.Uint32() >> r.IntN(33)})
	}
	buf := make([]byte, 70_000)
	for i, m := range metas {
		key := bytes.Repeat([]byte{'k'}, []int{0, 1, 127, 128, MaxKeySize}[i%5])
		val := bytes.Repeat([]byte{'v'}, r.IntN(300))
		v := valRef{n: uint64(len(val))}
		size := recSize(&m, len(key), v)
		encodeRec(buf[:size], &m, key, v, val)
		rc := parseRec(buf)
		if rc.meta() != m || !bytes.Equal(rc.key(), key) || !bytes.Equal(rc.inline(), val) || rc.size() != size || rc.large() {
			t.Fatalf("%+v: round trip gave %+v", m, rc.meta())
		}
		if expireAt(buf) != m.ExpireAt {
			t.Fatalf("expireAt %d, want %d", expireAt(buf), m.ExpireAt)
		}
		if h := size - len(key) - len(val); h > 32 {
			t.Fatalf("header of %d bytes; the documented worst case is 32", h)
		}
		lv := valRef{large: true, n: uint64(i) << 20}
		encodeRec(buf, &m, key, lv, nil)
		if rc := parseRec(buf); rc.val != lv || !bytes.Equal(rc.key(), key) || rc.size() != recSize(&m, len(key), lv) {
			t.Fatalf("large record round trip: %+v", rc.val)
		}
	}
}

// TestHeaderSize pins the header sizes the memory figures rely on.
func TestHeaderSize(t *testing.T) {
	for _, c := range []struct {
		m    Meta
		want int
	}{
		{Meta{}, 3},
		{Meta{Version: 1 << 60, Scheme: 3, Aux: 1}, 17},
		{Meta{Version: 1 << 60, ExpireAt: 1, Scheme: 3, Flags: 1, Aux: 1}, 24},
		{Meta{Version: 1 << 50, ExpireAt: 1 << 47, Scheme: 3, Flags: 1, Aux: 1}, 26},
	} {
		if got := recSize(&c.m, 16, valRef{n: 100}) - 16 - 100; got != c.want {
			t.Errorf("%+v: header %d bytes, want %d", c.m, got, c.want)
		}
	}
}

// TestTable drives the index alone with random inserts and removes,
// including many equal prefixes and prefixes at both ends, checking the
// invariants and a sorted reference after every step.
func TestTable(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	tab := newTable()
	var ref []uint64
	next := uint64(1)
	for step := range 20_000 {
		if len(ref) == 0 || r.IntN(3) != 0 && step < 13_000 {
			p := r.Uint64N(prefixEnd)
			switch r.IntN(4) {
			case 0:
				p = r.Uint64N(4)
			case 1:
				p = prefixEnd - 1 - r.Uint64N(4)
			}
			e := p<<offsetBits | next
			next++
			tab.add(e)
			ref = append(ref, e)
		} else {
			k := r.IntN(len(ref))
			i := tab.seek(entryPrefix(ref[k]))
			for i < len(tab.slots) && tab.slots[i] != ref[k] && entryPrefix(tab.slots[i]) == entryPrefix(ref[k]) {
				i++
			}
			if i == len(tab.slots) || tab.slots[i] != ref[k] {
				t.Fatalf("entry %x lost", ref[k])
			}
			tab.remove(i)
			ref = slices.Delete(ref, k, k+1)
		}
		if step%499 == 0 || len(ref) < 50 {
			if err := tab.check(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if err := tab.check(); err != nil {
		t.Fatal(err)
	}
	if tab.home > 4*minHome {
		t.Fatalf("%d home slots for %d entries: the table did not shrink", tab.home, tab.count)
	}
}
