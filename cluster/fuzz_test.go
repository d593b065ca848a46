package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

// cmdGen turns bytes into commands drawn from small pools, so random
// sequences hit idempotent repeats, conflicts and refusals often.
type cmdGen struct {
	b []byte
}

func (g *cmdGen) next(n int) int {
	if len(g.b) == 0 {
		return 0
	}
	v := int(g.b[0]) % n
	g.b = g.b[1:]
	return v
}

var (
	genSpecs   = []string{"none", "rep:1", "rep:2", "rep:3", "rep:5", "rep:8", "split:2+1", "split:3+2", "split:4+2", "stripe:2+1", "hybrid:2+2"}
	genAliases = []string{"", "", "hot", "HOT", "cold", "safe", "1x", "rep", "a.b-c_d"}
	genNames   = append(append([]string{"rep:0", "bogus", ""}, genSpecs...), genAliases...)
)

func (g *cmdGen) command() Command {
	switch g.next(7) {
	case 0:
		return Init{Expect: g.next(8), Voters: g.next(6)}
	case 1, 2:
		n := testNode(g.next(10))
		if g.next(4) == 0 {
			n.PeerAddr = fmt.Sprintf("10.0.0.%d:1", g.next(4)) // moves, sometimes onto another node's address
		}
		return AddNode{Node: n}
	case 3:
		sp, _ := scheme.Parse(genSpecs[g.next(len(genSpecs))])
		return CreateScheme{Alias: genAliases[g.next(len(genAliases))], Spec: sp}
	case 4:
		return DropScheme{Name: genNames[g.next(len(genNames))]}
	case 5:
		kinds := []string{PolicySize, PolicyTemperature, PolicyOff, "bogus"}
		return SetPolicy{Kind: kinds[g.next(len(kinds))], Threshold: int64(g.next(3)) * 100,
			Below: genNames[g.next(len(genNames))], Above: genNames[g.next(len(genNames))],
			Hot: genNames[g.next(len(genNames))], Cold: genNames[g.next(len(genNames))], IdleSeconds: int64(g.next(3))}
	}
	return SetDefault{Name: genNames[g.next(len(genNames))]}
}

// runSequence applies generated commands from the empty map, checking the
// invariants Apply promises after every step.
func runSequence(t testing.TB, data []byte) {
	g := &cmdGen{b: data}
	m := EmptyMap()
	for len(g.b) > 0 {
		c := g.command()
		next, err := Apply(m, c)
		checkStep(t, m, next, c, err)
		m = next
	}
}

func checkStep(t testing.TB, prev, next *Map, c Command, err error) {
	t.Helper()
	switch {
	case err != nil && next != prev:
		t.Fatalf("%+v: refused but returned a new map", c)
	case next == prev:
		return
	case next.Epoch != prev.Epoch+1:
		t.Fatalf("%+v: epoch %d → %d", c, prev.Epoch, next.Epoch)
	}
	checkValid(t, next)
	for i, n := range prev.Nodes {
		if next.Nodes[i].ID != n.ID || next.Nodes[i].State != n.State {
			t.Fatalf("%+v: node %d changed identity or state", c, i)
		}
	}
	if prev.State == OK && !equalShards(prev.Shards, next.Shards) {
		t.Fatalf("%+v: placement changed after forming", c)
	}
}

func TestApplyRandomSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		data := make([]byte, 40+r.IntN(200))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		runSequence(t, data)
	}
}

func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 3, 3, 1, 0, 1, 1, 1, 2, 3, 2, 3, 5, 4})
	f.Add([]byte("create a cluster, add some schemes, drop them again"))
	f.Fuzz(func(t *testing.T, data []byte) { runSequence(t, data) })
}

// UnmarshalMap never panics, and whatever it accepts is valid and encodes
// back to itself.
func FuzzUnmarshalMap(f *testing.F) {
	m := mustApply(f, formed(f, 3, 1), CreateScheme{Alias: "hot", Spec: spec(f, "rep:2")})
	good, _ := m.Marshal()
	empty, _ := EmptyMap().Marshal()
	f.Add(good)
	f.Add(empty)
	f.Add([]byte(`{"state":"ok","shards":[{"first":-5,"last":99999}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := UnmarshalMap(data)
		if err != nil {
			return
		}
		checkValid(t, m)
		for _, s := range []int{0, keyslot.Count / 2, keyslot.Count - 1} {
			m.Coordinator(s)
		}
	})
}

// DecodeCommand never panics on arbitrary log entries.
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range []Command{Init{Expect: 3, Voters: 3}, AddNode{Node: testNode(1)}, CreateScheme{Alias: "x", Spec: spec(f, "rep:2")}} {
		b, _ := EncodeCommand(c)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			return
		}
		if _, err := EncodeCommand(c); err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		_, _ = Apply(NewMap(3, 3), c)
	})
}
