package store

import (
	"bytes"
	"testing"

	"github.com/memgest/memgest/internal/bigcopy"
)

// sameArray says whether a and b start at the same byte.
func sameArray(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// Large values: Put copies them (the caller may reuse its buffer), the
// Owned writes keep the buffer handed over, View returns the store's own
// bytes and Get a copy; a small value is copied every way.
func TestLargeValuesCopiedOnlyWhenNeeded(t *testing.T) {
	s := New()
	big := bytes.Repeat([]byte("0123456789abcdef"), (3*bigcopy.Step+5)/16+1)
	small := []byte("small")

	if err := s.Put([]byte("copied"), big, Meta{Version: 1}); err != nil {
		t.Fatal(err)
	}
	v, _, ok := s.View([]byte("copied"))
	if !ok || !bytes.Equal(v, big) || sameArray(v, big) {
		t.Fatalf("Put kept the caller's buffer or lost bytes: ok %v equal %v", ok, bytes.Equal(v, big))
	}

	handed := bytes.Clone(big)
	if applied, err := s.PutIfNewerOwned([]byte("owned"), handed, Meta{Version: 1}); !applied || err != nil {
		t.Fatal(applied, err)
	}
	if _, _, _, err := s.ExchangeIfOwned([]byte("exchanged"), handed, Meta{Version: 1}, func(Meta, bool) bool { return true }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"owned", "exchanged"} {
		v, _, ok := s.View([]byte(k))
		if !ok || !sameArray(v, handed) || len(v) != len(big) || cap(v) != len(v) {
			t.Fatalf("%s: View does not give the buffer handed over, without spare capacity", k)
		}
		got, _, ok := s.Get([]byte(k), nil)
		if !ok || !bytes.Equal(got, big) || sameArray(got, handed) {
			t.Fatalf("%s: Get must copy", k)
		}
	}

	for _, put := range []func() error{
		func() error { return s.Put([]byte("s"), small, Meta{Version: 1}) },
		func() error { _, err := s.PutIfNewerOwned([]byte("s"), small, Meta{Version: 2}); return err },
	} {
		if err := put(); err != nil {
			t.Fatal(err)
		}
		v, _, ok := s.View([]byte("s"))
		if !ok || string(v) != "small" || sameArray(v, small) {
			t.Fatal("a small value must be copied into the slabs and out of them")
		}
	}
	if st := s.Stats(); st.LargeBytes != int64(3*len(big)) {
		t.Fatalf("large bytes %d, want %d", st.LargeBytes, 3*len(big))
	}
}

func TestAppendLarge(t *testing.T) {
	src := bytes.Repeat([]byte{1, 2, 3}, bigcopy.Step)
	for _, dst := range [][]byte{nil, []byte("head"), make([]byte, 2, 10*bigcopy.Step)} {
		want := append(bytes.Clone(dst), src...)
		if got := bigcopy.Append(dst, src); !bytes.Equal(got, want) {
			t.Fatalf("appendLarge onto %d bytes differs", len(dst))
		}
	}
}

// ValueLen gives a small and a large value's length, and nothing for a
// missing key.
func TestValueLen(t *testing.T) {
	s := New()
	big := bytes.Repeat([]byte("x"), 2*bigcopy.Step+3)
	for k, v := range map[string][]byte{"small": []byte("small"), "big": big, "empty": {}} {
		if err := s.Put([]byte(k), v, Meta{Version: 1}); err != nil {
			t.Fatal(err)
		}
		if n, ok := s.ValueLen([]byte(k)); !ok || n != len(v) {
			t.Fatalf("ValueLen(%s) = %d, %v; want %d", k, n, ok, len(v))
		}
	}
	if n, ok := s.ValueLen([]byte("missing")); ok || n != 0 {
		t.Fatalf("ValueLen of a missing key = %d, %v", n, ok)
	}
}
