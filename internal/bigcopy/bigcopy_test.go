package bigcopy

import (
	"bytes"
	"hash/crc32"
	"testing"
)

func TestAppendAndJoin(t *testing.T) {
	src := bytes.Repeat([]byte{1, 2, 3, 4, 5}, Step/2+7)
	for _, dst := range [][]byte{nil, []byte("head"), make([]byte, 3, 4*Step)} {
		want := append(bytes.Clone(dst), src...)
		if got := Append(dst, src); !bytes.Equal(got, want) {
			t.Fatalf("Append onto %d bytes differs", len(dst))
		}
	}
	if got := Join([]byte("a"), src, nil, []byte("z")); !bytes.Equal(got, append(append([]byte("a"), src...), 'z')) {
		t.Fatal("Join differs")
	}
	if got := Join(); len(got) != 0 {
		t.Fatal("Join of nothing is not empty")
	}
}

// Checksum in steps is the CRC32C of the whole, on either side of Step.
func TestChecksumIsCRC32C(t *testing.T) {
	table := crc32.MakeTable(crc32.Castagnoli)
	for _, n := range []int{0, 1, Step - 1, Step, Step + 1, 3*Step + 7} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		if got, want := Checksum(b), crc32.Checksum(b, table); got != want {
			t.Errorf("Checksum of %d bytes = %#x, want %#x", n, got, want)
		}
	}
}
