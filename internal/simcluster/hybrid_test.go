package simcluster_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
)

// hybridSpecs are the hybrid shapes of issue 25, with 512-byte chunks so
// that a few hundred small objects seal chunks on every node.
var hybridSpecs = []string{"hybrid:2+2/512", "hybrid:3+2/512", "hybrid:4+2/512"}

// TestHybridEveryFailurePattern: keys of hybrid:2+2, 3+2 and 4+2 on six
// data nodes and two spares; then one node, or two at ring distance 1, 2
// or 3, die at once and are failed over. Placements are rotations of the
// ring, so these patterns put every choice of up to two of a list's
// positions (data, parity, replica) among the failed in some list. Every
// key reads back bit-exact once recovered and again once rebuilt, with
// its scheme's full tolerance and every piece verified; a single failure
// is served by copying chunks from the replica holders, decoding none
// (RE-Store §IV-D).
func TestHybridEveryFailurePattern(t *testing.T) {
	seed := simcluster.Seed(t)
	for _, offsets := range [][]int{{0}, {0, 1}, {0, 2}, {0, 3}} {
		t.Run(fmt.Sprintf("kill%v", offsets), func(t *testing.T) {
			c := simcluster.Start(t, seed, simcluster.Options{Nodes: 6, Spares: 2})
			keys := hybridLoad(t, c)
			victims := rotationWithOneVoter(t, c, offsets)
			for _, v := range victims {
				c.Kill(v)
			}
			c.FailOver(victims...)
			awaitReadable(t, c, keys)
			copied, decoded := chunkCounts(t, c)
			if len(victims) == 1 && (copied == 0 || decoded != 0) {
				t.Fatalf("one failure: %d chunks copied, %d decoded; want copies only", copied, decoded)
			}
			t.Logf("victims %v: %d chunks copied, %d decoded", victims, copied, decoded)
			c.Settle("rebuilt")
			for _, w := range keys {
				expectValue(t, "GET "+w.key+" after the rebuild", c.Do(c.AnyLive(), "GET", w.key), w.value)
				f := simcluster.Fields(c.Do(c.AnyLive(), "SCHEME.OF", w.key))
				if f["tolerates"].Int() != 2 {
					t.Fatalf("SCHEME.OF %s after the rebuild tolerates %d, want 2", w.key, f["tolerates"].Int())
				}
				if v := simcluster.Fields(c.Do(c.AnyLive(), "SCHEME.VERIFY", w.key)); v["unavailable"].Int() != 0 || len(v["problems"].Items()) != 0 {
					t.Fatalf("SCHEME.VERIFY %s after the rebuild: %s", w.key, simcluster.Render(c.Do(c.AnyLive(), "SCHEME.VERIFY", w.key)))
				}
			}
		})
	}
}

// hybridLoad writes 150 keys of each hybrid shape, one in 25 larger than a
// chunk (fragments), overwrites every tenth in place and deletes another
// tenth (those are left out of the result).
func hybridLoad(t *testing.T, c *simcluster.Cluster) []*written {
	t.Helper()
	var keys []*written
	for _, spec := range hybridSpecs {
		for i := range 150 {
			k := fmt.Sprintf("h:%s:%d", spec, i)
			w := &written{key: k, spec: spec, value: value(c, "hybrid:4+2", k)}
			if i%25 == 11 {
				w.value = strings.Repeat(w.value, 1+1500/len(w.value))
			}
			expect(t, "SET "+k, c.Do(c.AnyLive(), "SET", k, w.value, "SCHEME", spec), "+OK")
			switch i % 10 {
			case 3:
				expect(t, "DEL "+k, c.Do(c.AnyLive(), "DEL", k), ":1")
				continue
			case 6:
				w.value = strings.ToUpper(w.value)
				expect(t, "SET "+k, c.Do(c.AnyLive(), "SET", k, w.value), "+OK")
			}
			keys = append(keys, w)
		}
	}
	return keys
}

// rotationWithOneVoter maps ring offsets onto data nodes, rotated to the
// first place where at most one of them is a Raft voter (the control
// plane keeps its quorum).
func rotationWithOneVoter(t *testing.T, c *simcluster.Cluster, offsets []int) []int {
	t.Helper()
	for s := range 6 {
		var out []int
		voters := 0
		for _, o := range offsets {
			v := (s + o) % 6
			out = append(out, v)
			if c.MapNode(v).Voter {
				voters++
			}
		}
		if voters <= 1 {
			return out
		}
	}
	t.Fatalf("every rotation of %v has two voters", offsets)
	return nil
}

// chunkCounts sums the live nodes' INFO counts of lost chunks copied
// from a replica holder and decoded from their stripes.
func chunkCounts(t *testing.T, c *simcluster.Cluster) (copied, decoded int64) {
	t.Helper()
	for i := range c.Len() {
		if !c.Alive(i) {
			continue
		}
		info := c.DoQuiet(i, "INFO").Text()
		copied += infoInt(t, info, "stripe_chunks_copied")
		decoded += infoInt(t, info, "stripe_chunks_decoded")
	}
	return copied, decoded
}

// infoInt is field name of an INFO text, as an integer.
func infoInt(t *testing.T, info, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(field(t, info, name), 10, 64)
	if err != nil {
		t.Fatalf("INFO %s: %v", name, err)
	}
	return n
}
