package object

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestHashRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		want := map[string]string{}
		var h HashObject
		for range rng.IntN(40) {
			name := fmt.Sprint("f", rng.IntN(30))
			val := make([]byte, rng.IntN(300))
			for i := range val {
				val[i] = byte(rng.Uint32())
			}
			if rng.IntN(4) == 0 {
				h.Del([]byte(name))
				delete(want, name)
				continue
			}
			h.Set([]byte(name), val)
			want[name] = string(val)
		}
		enc := h.Encode()
		if len(enc) != h.EncodedLen() {
			t.Fatalf("trial %d: EncodedLen %d, encoding %d bytes", trial, h.EncodedLen(), len(enc))
		}
		if TypeOf(enc) != Hash {
			t.Fatalf("trial %d: TypeOf = %v", trial, TypeOf(enc))
		}
		got, err := DecodeHash(enc)
		if err != nil || len(got) != len(want) {
			t.Fatalf("trial %d: %d fields, err %v; want %d", trial, len(got), err, len(want))
		}
		for name, v := range want {
			if g, ok := got.Get([]byte(name)); !ok || string(g) != v {
				t.Fatalf("trial %d: field %s decoded wrong", trial, name)
			}
			if g, ok, err := HashGet(enc, []byte(name)); !ok || err != nil || string(g) != v {
				t.Fatalf("trial %d: HashGet %s: %v %v", trial, name, ok, err)
			}
		}
		if _, ok, _ := HashGet(enc, []byte("absent")); ok {
			t.Fatalf("trial %d: HashGet found an absent field", trial)
		}
	}
}

// Replacing a value by one of the same length changes only its bytes: what
// lets a packed scheme update the hash in place (hash.go).
func TestHashSameLengthUpdateChangesOnlyItsBytes(t *testing.T) {
	h := HashObject{{[]byte("a"), []byte("111")}, {[]byte("b"), []byte("222")}, {[]byte("c"), []byte("333")}}
	before := h.Encode()
	h.Set([]byte("b"), []byte("999"))
	after := h.Encode()
	if len(before) != len(after) {
		t.Fatalf("length changed: %d -> %d", len(before), len(after))
	}
	diff := 0
	for i := range before {
		if before[i] != after[i] {
			diff++
		}
	}
	if diff != 3 {
		t.Fatalf("%d bytes differ, want 3", diff)
	}
}

func TestStringsAreNotTyped(t *testing.T) {
	for _, v := range [][]byte{nil, []byte(""), []byte("hello"), {0x00, 0xff, 'm', 'g', 'o'}, []byte("\x00\xffmgo\x01\x00\x02")} {
		if TypeOf(v) != String || IsReserved(v) {
			t.Errorf("%q: TypeOf %v, reserved %v", v, TypeOf(v), IsReserved(v))
		}
	}
	// Any string starting with the header is refused, whatever its type byte.
	if !IsReserved([]byte("\x00\xffmgo\x07\x00\x01 and more")) {
		t.Error("a header with an unknown type byte is not reserved")
	}
}

func TestDecodeHashRefusesCorruptValues(t *testing.T) {
	good := HashObject{{[]byte("field"), []byte("value")}}.Encode()
	cases := map[string][]byte{
		"a string":           []byte("plain"),
		"truncated count":    good[:headerLen],
		"truncated field":    good[:len(good)-2],
		"trailing bytes":     append(bytes.Clone(good), 0),
		"huge count":         append(appendHeader(nil, Hash), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"field past the end": append(appendHeader(nil, Hash), 1, 100, 'x'),
	}
	for name, v := range cases {
		if _, err := DecodeHash(v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeHash err %v, want ErrCorrupt", name, err)
		}
		if _, _, err := HashGet(v, []byte("field")); name != "trailing bytes" && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: HashGet err %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeHash(f *testing.F) {
	f.Add(HashObject{{[]byte("a"), []byte("b")}}.Encode())
	f.Fuzz(func(t *testing.T, v []byte) {
		h, err := DecodeHash(v)
		if err != nil {
			return
		}
		again, err := DecodeHash(h.Encode())
		if err != nil || len(again) != len(h) {
			t.Fatalf("%q: re-encoded hash decodes as %d fields, %v", v, len(again), err)
		}
		for i, f := range h {
			if !bytes.Equal(f.Name, again[i].Name) || !bytes.Equal(f.Value, again[i].Value) {
				t.Fatalf("%q: field %d differs after re-encoding", v, i)
			}
		}
	})
}
