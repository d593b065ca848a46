package hybrid

import (
	"math"
	"testing"

	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/scheme/stripe"
)

// TestSavingAgainstReplication: the memory a hybrid scheme saves against
// rep:M+1, which tolerates as many failures, is RE-Store §IV-A's
// 1 − (2K+M−1)/(K(M+1)); the configurations of decision 0008 span the
// paper's 18–34%.
func TestSavingAgainstReplication(t *testing.T) {
	for spec, want := range map[string]float64{
		"hybrid:2+2": 1 - 5.0/6, "hybrid:3+2": 1 - 7.0/9, "hybrid:4+2": 0.25,
		"hybrid:6+2": 1 - 13.0/18, "hybrid:3+3": 1 - 8.0/12,
	} {
		sp, err := scheme.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := Saving(sp); math.Abs(got-want) > 1e-9 {
			t.Errorf("Saving(%s) = %.4f, want %.4f", spec, got, want)
		}
	}
}

// TestBindsOnlyHybridEntries: the factory refuses an entry of another
// kind, and a bound hybrid scheme answers SCHEME.INFO with its replica
// bytes (the replica holders' copies of sealed chunks) and its saving.
func TestBindsOnlyHybridEntries(t *testing.T) {
	m := kindtest.Map(t, 6, "stripe:4+2", "hybrid:4+2")
	if _, err := New(kindtest.Entry(t, m, "stripe:4+2"), kindtest.NewEnv(m, m.Nodes[0].ID)); err == nil {
		t.Fatal("hybrid bound a stripe entry")
	}
	s, err := New(kindtest.Entry(t, m, "hybrid:4+2"), kindtest.NewEnv(m, m.Nodes[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	info := s.(interface {
		Info(keys, logical int64, u *stripe.Usage) []kind.Detail
	}).Info(10, 1000, &stripe.Usage{Copies: 4096, Buffered: 512})
	got := map[string]any{}
	for _, d := range info {
		got[d.Name] = d.Value
	}
	if got["replica_bytes"] != int64(4096) || got["saving_vs_replication"] != "0.250" {
		t.Fatalf("SCHEME.INFO details %v", got)
	}
}
