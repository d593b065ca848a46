package wire

import (
	"bytes"
	"errors"
	"testing"
)

// Every field reads back as written, and the payload is then consumed.
func TestFieldsRoundTrip(t *testing.T) {
	e := Enc(nil).U8(7).U16(300).U32(70000).U64(1 << 40).I64(-5).Bytes([]byte("key")).Str("text").U8(1)
	d := NewDec(e)
	if d.U8() != 7 || d.U16() != 300 || d.U32() != 70000 || d.U64() != 1<<40 || d.I64() != -5 ||
		string(d.Bytes()) != "key" || d.Str() != "text" || !d.Flag() {
		t.Fatal("a field read back differently")
	}
	if err := d.Done(); err != nil || len(d.Rest()) != 0 {
		t.Fatalf("done %v, %d bytes left", err, len(d.Rest()))
	}
}

// A short payload fails every read after the first that runs out, and
// bytes left over make Done fail: a peer's malformed frame changes
// nothing.
func TestDecRefusesTruncationAndTrailingBytes(t *testing.T) {
	full := Enc(nil).U32(1).Bytes([]byte("abc"))
	for i := range len(full) {
		d := NewDec(full[:i])
		d.U32()
		d.Bytes()
		if !errors.Is(d.Done(), ErrMalformed) {
			t.Fatalf("%d of %d bytes decoded", i, len(full))
		}
	}
	d := NewDec(append(full, 0))
	d.U32()
	d.Bytes()
	if !errors.Is(d.Done(), ErrMalformed) {
		t.Fatal("a trailing byte was accepted")
	}
	d = NewDec(Enc(nil).U8(9))
	d.Fail()
	if d.U8() != 0 || !errors.Is(d.Err(), ErrMalformed) {
		t.Fatal("a failed Dec still reads")
	}
}

// A list's count larger than its payload is refused before anything is
// allocated for it.
func TestListsRoundTripAndRefuseHugeCounts(t *testing.T) {
	items := []string{"a", "bb", ""}
	b := EncodeList(items, Enc.Str)
	got, err := DecodeList(b, (*Dec).Str)
	if err != nil || len(got) != 3 || got[1] != "bb" {
		t.Fatalf("list %q, %v", got, err)
	}
	if _, err := DecodeList(Enc(nil).U32(1<<30), (*Dec).Str); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a count of 2^30 in 4 bytes: %v", err)
	}
}

// A spool sends a large string from where it lies, as a segment of the
// tail, and its bytes are what an Enc would have made.
func TestSpoolRefersToLargeStrings(t *testing.T) {
	large := bytes.Repeat([]byte("L"), SpoolMin)
	s := Spool{Cur: Enc(nil).U8(1)}
	s.Bytes([]byte("small"))
	s.Bytes(large)
	s.Cur = s.Cur.U8(2)
	payload, tail := s.Frame()
	whole := append(append([]byte{}, payload...), bytes.Join(tail, nil)...)
	want := Enc(nil).U8(1).Bytes([]byte("small")).Bytes(large).U8(2)
	if !bytes.Equal(whole, want) || s.Size() != len(want) {
		t.Fatalf("spool makes %d bytes (size %d), want %d", len(whole), s.Size(), len(want))
	}
	refs := 0
	for _, seg := range tail {
		if len(seg) > 0 && &seg[0] == &large[0] {
			refs++
		}
	}
	if refs != 1 {
		t.Fatalf("%d references to the large string, want 1", refs)
	}
}
