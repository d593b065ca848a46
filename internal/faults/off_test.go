//go:build !failpoints

package faults

import (
	"errors"
	"testing"
)

// TestInertWithoutTheTag: a production build refuses to inject anything.
func TestInertWithoutTheTag(t *testing.T) {
	if Built {
		t.Fatal("Built without the failpoints tag")
	}
	if err := Arm(BeforeCommit, "crash"); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Arm = %v, want ErrNotBuilt", err)
	}
	if err := SetLink("127.0.0.1:1", "drop"); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("SetLink = %v, want ErrNotBuilt", err)
	}
	Hit(BeforeCommit) // returns
	if Active(BugEarlyAck) {
		t.Fatal("a bug is active in a production build")
	}
}
