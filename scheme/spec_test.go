package scheme

import (
	"errors"
	"testing"
	"time"
)

func TestParseCanonical(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want      Spec
		tolerance int
		nodes     int
		overhead  float64
	}{
		{"none", Spec{Kind: None}, 0, 1, 1},
		{"rep:1", Spec{Kind: Rep, R: 1}, 0, 1, 1},
		{"rep:3", Spec{Kind: Rep, R: 3}, 2, 3, 3},
		{"REP:3", Spec{Kind: Rep, R: 3}, 2, 3, 3},
		{"split:4+2", Spec{Kind: Split, K: 4, M: 2}, 2, 6, 1.5},
		{"split:1+0", Spec{Kind: Split, K: 1, M: 0}, 0, 1, 1},
		{"stripe:3+1", Spec{Kind: Stripe, K: 3, M: 1}, 1, 4, 4.0 / 3},
		{"stripe:4+2/256", Spec{Kind: Stripe, K: 4, M: 2, Chunk: 256}, 2, 6, 1.5},
		{"stripe:4+2/4096", Spec{Kind: Stripe, K: 4, M: 2}, 2, 6, 1.5},
		{"hybrid:4+2", Spec{Kind: Hybrid, K: 4, M: 2}, 2, 6, 9.0 / 4},
		{"hybrid:2+2/512", Spec{Kind: Hybrid, K: 2, M: 2, Chunk: 512}, 2, 4, 5.0 / 2},
		{"hybrid:3+3", Spec{Kind: Hybrid, K: 3, M: 3}, 3, 6, 8.0 / 3},
		{"stripe:4+2@inplace", Spec{Kind: Stripe, K: 4, M: 2}, 2, 6, 1.5},
		{"stripe:4+2@batch", Spec{Kind: Stripe, K: 4, M: 2, Mode: Batch}, 2, 6, 1.5},
		{"stripe:4+2/256@batch:1ms", Spec{Kind: Stripe, K: 4, M: 2, Chunk: 256, Mode: Batch}, 2, 6, 1.5},
		{"STRIPE:4+2@BATCH:2MS", Spec{Kind: Stripe, K: 4, M: 2, Mode: Batch, Bound: 2 * time.Millisecond}, 2, 6, 1.5},
		{"stripe:4+2@batch:1000us", Spec{Kind: Stripe, K: 4, M: 2, Mode: Batch}, 2, 6, 1.5},
		{"stripe:4+2@auto:500us", Spec{Kind: Stripe, K: 4, M: 2, Mode: Auto, Bound: 500 * time.Microsecond}, 2, 6, 1.5},
		{"hybrid:4+2@auto", Spec{Kind: Hybrid, K: 4, M: 2, Mode: Auto}, 2, 6, 9.0 / 4},
		{"hybrid:4+2/512@batch:100ms", Spec{Kind: Hybrid, K: 4, M: 2, Chunk: 512, Mode: Batch, Bound: 100 * time.Millisecond}, 2, 6, 9.0 / 4},
		{"stripe:2+1@batch:100us", Spec{Kind: Stripe, K: 2, M: 1, Mode: Batch, Bound: 100 * time.Microsecond}, 1, 3, 1.5},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if got != tc.want || got.Tolerance() != tc.tolerance || got.Nodes() != tc.nodes || got.Overhead() != tc.overhead {
			t.Errorf("Parse(%q) = %+v tol %d nodes %d overhead %v", tc.in, got, got.Tolerance(), got.Nodes(), got.Overhead())
		}
		if want := map[int]int{0: DefaultChunk, 256: 256, 512: 512}[got.Chunk]; got.Kind != Split && got.K > 0 && got.ChunkSize() != want {
			t.Errorf("Parse(%q).ChunkSize() = %d", tc.in, got.ChunkSize())
		}
		again, err := Parse(got.String())
		if err != nil || again != got {
			t.Errorf("round trip of %q via %q: %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"", "nonе", "none:1", "rep", "rep:", "rep:0", "rep:-1", "rep:+2", "rep:17", "rep:x",
		"split", "split:4", "split:4+", "split:+2", "split:0+2", "split:33+1", "split:4+17",
		"split:4+-1", "hybrid:4+0", "hybrid:4+1", "raid:5", "rep:3 ", " rep:3", "split:4+2+1",
		"stripe:4+2/", "stripe:4+2/63", "stripe:4+2/1048577", "stripe:4+2/x", "stripe:4+2/+256",
		"split:4+2/256", "hybrid:4+2/63", "stripe:4/256", "stripe:4+2/256/1",
		"stripe:4+2@", "stripe:4+2@fast", "stripe:4+2@batch:", "stripe:4+2@batch:2", "stripe:4+2@batch:2s",
		"stripe:4+2@batch:0ms", "stripe:4+2@batch:99us", "stripe:4+2@batch:101ms", "stripe:4+2@batch:-1ms",
		"stripe:4+2@batch:+1ms", "stripe:4+2@batch:1.5ms", "stripe:4+2@inplace:1ms", "stripe:4+2@auto:x",
		"rep:3@batch", "split:4+2@batch", "none@auto", "none@inplace", "rep:3@inplace", "stripe:4+2@batch@auto",
		"stripe:4+2@batch:99999999999999999999ms", "stripe@batch", "@batch",
	} {
		_, err := Parse(in)
		if !errors.Is(err, ErrSpec) {
			t.Errorf("Parse(%q) = %v, want ErrSpec", in, err)
		}
	}
}

func TestCheckAlias(t *testing.T) {
	for _, ok := range []string{"hot", "cold-2", "a.b_c", "Z"} {
		if err := CheckAlias(ok); err != nil {
			t.Errorf("CheckAlias(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "none", "rep", "split", "rep:3", "1abc", "a b", "a:b", string(make([]byte, 65))} {
		if err := CheckAlias(bad); !errors.Is(err, ErrAlias) {
			t.Errorf("CheckAlias(%q) = %v, want ErrAlias", bad, err)
		}
	}
}

// TestModeSpelling checks the canonical spelling of write modes: in place
// has none, a default bound is left out, a bound prints in ms when whole.
func TestModeSpelling(t *testing.T) {
	for _, tc := range []struct {
		sp   Spec
		want string
	}{
		{Spec{Kind: Stripe, K: 4, M: 2}, "stripe:4+2"},
		{Spec{Kind: Stripe, K: 4, M: 2, Mode: Batch}, "stripe:4+2@batch"},
		{Spec{Kind: Stripe, K: 4, M: 2, Mode: Batch, Bound: 3 * time.Millisecond}, "stripe:4+2@batch:3ms"},
		{Spec{Kind: Hybrid, K: 4, M: 2, Chunk: 256, Mode: Auto, Bound: 1500 * time.Microsecond}, "hybrid:4+2/256@auto:1500us"},
	} {
		if got := tc.sp.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.sp, got, tc.want)
		}
		if !tc.sp.Valid() {
			t.Errorf("%+v is not Valid", tc.sp)
		}
		want := tc.sp.Bound
		if want == 0 {
			want = DefaultBound
		}
		if got := tc.sp.LatencyBound(); got != want {
			t.Errorf("%+v.LatencyBound() = %v, want %v", tc.sp, got, want)
		}
	}
	for _, bad := range []Spec{
		{Kind: Rep, R: 3, Mode: Batch},
		{Kind: Stripe, K: 4, M: 2, Mode: Auto + 1},
		{Kind: Stripe, K: 4, M: 2, Bound: time.Millisecond},
		{Kind: Stripe, K: 4, M: 2, Mode: Batch, Bound: 1500 * time.Nanosecond},
		{Kind: Stripe, K: 4, M: 2, Mode: Batch, Bound: time.Second},
	} {
		if bad.Valid() {
			t.Errorf("%+v is Valid", bad)
		}
	}
}

// Every kind maps onto the reliability model with its own tolerance,
// width and overhead.
func TestModelAgreesWithSpec(t *testing.T) {
	for _, s := range []string{"none", "rep:1", "rep:3", "split:4+2", "stripe:6+3@batch", "hybrid:4+2"} {
		sp, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		m := sp.Model()
		if m.Name != sp.String() || m.Tolerance() != sp.Tolerance() || m.Width() != sp.Nodes() || m.Overhead() != sp.Overhead() {
			t.Errorf("%s: model %+v: tolerance %d width %d overhead %g; spec %d %d %g",
				s, m, m.Tolerance(), m.Width(), m.Overhead(), sp.Tolerance(), sp.Nodes(), sp.Overhead())
		}
	}
}
