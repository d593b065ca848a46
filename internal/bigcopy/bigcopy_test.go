package bigcopy

import (
	"bytes"
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
