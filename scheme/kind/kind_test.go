package kind

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
)

// A kind no package implements is refused, naming the scheme and kind.
func TestBindRefusesAnUnregisteredKind(t *testing.T) {
	sp, _ := scheme.Parse("hybrid:2+1")
	_, err := Registry{}.Bind(cluster.SchemeEntry{ID: 4, Spec: sp}, nil)
	if err == nil || !strings.Contains(err.Error(), "hybrid:2+1") {
		t.Fatalf("bind %v", err)
	}
}

// A lost key answers -LOST naming the key, never nil; every fetch failure
// that means the piece is gone is a loss, others are not.
func TestLostKeysAndLosses(t *testing.T) {
	err := LostKey{Key: "k", Scheme: "split:2+1", Lost: 2, Total: 3}.Err()
	var le *LostError
	if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), `LOST key "k" unrecoverable`) {
		t.Fatalf("%v", err)
	}
	for _, e := range []error{ErrNodeFailed, ErrPieceGone, ErrPieceCorrupt, ErrOtherVersion, fmt.Errorf("node x: %w", ErrPieceGone)} {
		if !IsLoss(e) {
			t.Errorf("%v is not a loss", e)
		}
	}
	if IsLoss(errors.New("no reply within 2s")) {
		t.Error("a timeout counted as a loss")
	}
}
