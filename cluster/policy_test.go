package cluster

import (
	"errors"
	"strings"
	"testing"
)

// KVMD §3's hybrid mode: values below the threshold take one scheme, the
// rest another; a key elsewhere (custom mode) is left where it is.
func TestPolicyPickSize(t *testing.T) {
	p := &Policy{Kind: PolicySize, Threshold: 100, Below: 2, Above: 3}
	for _, tc := range []struct {
		cur    uint16
		exists bool
		size   int
		want   uint16
		ok     bool
	}{
		{0, false, 99, 2, true},
		{0, false, 100, 3, true}, // at the threshold: above
		{2, true, 100, 3, true},  // an update crossing upwards moves the key
		{3, true, 0, 2, true},    // and downwards
		{4, true, 5, 0, false},   // a key in another scheme stays there
		{NoneID, true, 5, 0, false},
	} {
		id, ok := p.Pick(tc.cur, tc.exists, tc.size)
		if id != tc.want || ok != tc.ok {
			t.Errorf("Pick(%d, %v, %d) = %d, %v; want %d, %v", tc.cur, tc.exists, tc.size, id, ok, tc.want, tc.ok)
		}
	}
	var none *Policy
	if _, ok := none.Pick(2, true, 5); ok || none.Names(2) {
		t.Error("a nil policy decided")
	}
}

func TestPolicyPickTemperature(t *testing.T) {
	p := &Policy{Kind: PolicyTemperature, Hot: 2, Cold: 3, IdleSeconds: 60}
	for _, tc := range []struct {
		cur    uint16
		exists bool
		want   uint16
		ok     bool
	}{{0, false, 2, true}, {2, true, 2, true}, {3, true, 2, true}, {4, true, 0, false}} {
		if id, ok := p.Pick(tc.cur, tc.exists, 10); id != tc.want || ok != tc.ok {
			t.Errorf("Pick(%d, %v) = %d, %v", tc.cur, tc.exists, id, ok)
		}
	}
	if p.Temperature() != p || (&Policy{Kind: PolicySize}).Temperature() != nil {
		t.Error("Temperature")
	}
}

func TestSetPolicy(t *testing.T) {
	m := mustApply(t, formed(t, 5, 0), CreateScheme{Alias: "hot", Spec: spec(t, "rep:3")})
	m1 := mustApply(t, m, SetPolicy{Kind: PolicySize, Threshold: 4096, Below: "hot", Above: "split:3+2"})
	p := m1.Policy
	if p == nil || p.Kind != PolicySize || p.Threshold != 4096 || m1.Epoch != m.Epoch+1 {
		t.Fatalf("policy %+v at epoch %d", p, m1.Epoch)
	}
	hot, _ := m1.Scheme("hot")
	split, ok := m1.Scheme("split:3+2")
	if !ok || p.Below != hot.ID || p.Above != split.ID {
		t.Fatalf("schemes of %+v: split registered %v", p, ok)
	}
	if mustApply(t, m1, SetPolicy{Kind: PolicySize, Threshold: 4096, Below: "rep:3", Above: "split:3+2"}) != m1 {
		t.Error("setting the same policy changed the map")
	}
	m2 := mustApply(t, m1, SetPolicy{Kind: PolicyTemperature, Hot: "hot", Cold: "split:3+2", IdleSeconds: 600})
	if q := m2.Policy; q.Kind != PolicyTemperature || q.Hot != hot.ID || q.Cold != split.ID || q.IdleSeconds != 600 || q.Threshold != 0 {
		t.Fatalf("replaced by %+v", q)
	}
	if m1.Policy.Kind != PolicySize {
		t.Fatal("the published map's policy changed")
	}
	m3 := mustApply(t, m2, SetPolicy{Kind: PolicyOff})
	if m3.Policy != nil || mustApply(t, m3, SetPolicy{Kind: PolicyOff}) != m3 {
		t.Fatal("off")
	}
	mustApply(t, m3, DropScheme{Name: "hot"}) // no longer protected
	for _, mm := range []*Map{m1, m2, m3} {
		checkValid(t, mm)
	}
}

// A refused policy changes nothing, not even the catalogue a valid first
// scheme would have grown.
func TestSetPolicyRefused(t *testing.T) {
	five := mustApply(t, formed(t, 5, 0), CreateScheme{Alias: "hot", Spec: spec(t, "rep:3")})
	withPolicy := mustApply(t, five, SetPolicy{Kind: PolicySize, Threshold: 10, Below: "hot", Above: "rep:2"})
	for _, tc := range []struct {
		name string
		m    *Map
		cmd  Command
		kind error
		msg  string
	}{
		{"kind", five, SetPolicy{Kind: "lru"}, ErrBadCommand, `unknown policy "lru"`},
		{"threshold 0", five, SetPolicy{Kind: PolicySize, Below: "hot", Above: "rep:2"}, ErrBadCommand, "threshold must be 1..1099511627776 bytes, got 0"},
		{"threshold huge", five, SetPolicy{Kind: PolicySize, Threshold: 1 << 41, Below: "hot", Above: "rep:2"}, ErrBadCommand, "threshold must be"},
		{"same schemes", five, SetPolicy{Kind: PolicySize, Threshold: 5, Below: "hot", Above: "rep:3"}, ErrBadCommand, "two different schemes"},
		{"unknown alias", five, SetPolicy{Kind: PolicySize, Threshold: 5, Below: "rep:2", Above: "cold"}, ErrNoScheme, `no scheme named "cold"`},
		{"too wide", five, SetPolicy{Kind: PolicySize, Threshold: 5, Below: "rep:2", Above: "split:4+2"}, ErrTooFewNodes, "needs 6 nodes"},
		{"bad spec", five, SetPolicy{Kind: PolicySize, Threshold: 5, Below: "rep:2", Above: "rep:0"}, ErrBadCommand, "replica count"},
		{"idle 0", five, SetPolicy{Kind: PolicyTemperature, Hot: "hot", Cold: "rep:2"}, ErrBadCommand, "idle time must be 1..2592000 seconds, got 0"},
		{"idle long", five, SetPolicy{Kind: PolicyTemperature, Hot: "hot", Cold: "rep:2", IdleSeconds: MaxIdleSeconds + 1}, ErrBadCommand, "idle time"},
		{"drop named", withPolicy, DropScheme{Name: "hot"}, ErrProtected, "scheme hot is named by the size policy; change the policy first (SCHEME.POLICY)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := tc.m.Marshal()
			got, err := Apply(tc.m, tc.cmd)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %q (%v)", err, tc.msg, tc.kind)
			}
			after, _ := tc.m.Marshal()
			if got != tc.m || string(before) != string(after) {
				t.Fatal("a refused command changed the map")
			}
		})
	}
}

// The policy is part of the map Raft snapshots: it survives a round trip,
// and a map whose policy names a scheme it lacks is refused.
func TestPolicyInMapEncoding(t *testing.T) {
	m := mustApply(t, formed(t, 5, 0), SetPolicy{Kind: PolicyTemperature, Hot: "rep:3", Cold: "stripe:3+2", IdleSeconds: 30})
	b, _ := m.Marshal()
	back, err := UnmarshalMap(b)
	if err != nil || back.Policy == nil || *back.Policy != *m.Policy {
		t.Fatalf("round trip: %+v, %v", back.Policy, err)
	}
	bad := strings.Replace(string(b), `"cold":3`, `"cold":9`, 1)
	if _, err := UnmarshalMap([]byte(bad)); !errors.Is(err, ErrBadMap) {
		t.Fatalf("policy naming an unknown scheme: %v\n%s", err, bad)
	}
	old, _ := formed(t, 3, 0).Marshal()
	if strings.Contains(string(old), "policy") {
		t.Error("a map without a policy encodes one")
	}
}
