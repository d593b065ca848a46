package tests

import (
	"fmt"
	"strings"
	"testing"
)

// TestPackedCorruptionIsRepaired: issue 43 §1 on real processes. Keys of
// stripe:4+2, hybrid:4+2, stripe:4+2@batch and hybrid:4+2@batch, each
// flipped behind its checksum in the copy a read of it takes (DEBUG FLIP
// on its coordinator; for a batch object kept elsewhere, on the node
// holding its piece): every GET answers the value written — never the
// flipped bytes — the coordinators count what they found and repaired
// in memgest_corruption_*, and a second round of GETs finds nothing more.
func TestPackedCorruptionIsRepaired(t *testing.T) {
	c := startCluster(t, 7, clusterOptions{extra: []string{"--enable-debug-command", "--scrub-rate", "0"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	via := c.plainClient(1, 2) // forwards to each key's coordinator
	want := map[string]string{}
	for _, sch := range []string{"stripe:4+2", "hybrid:4+2", "stripe:4+2@batch", "hybrid:4+2@batch"} {
		for j := range 60 {
			k := c.keyOn(t, rdb, 0, fmt.Sprintf("%s:%d:", sch, j))
			v := strings.Repeat(fmt.Sprintf("%s/%d;", sch, j), 20)
			must(t, rdb.Do(ctx, "SET", k, v, "SCHEME", sch).Err())
			want[k] = v
		}
	}
	readAll := func(round string) {
		t.Helper()
		for k, v := range want {
			if got, err := via.Get(ctx, k).Result(); err != nil || got != v {
				t.Fatalf("%s: GET %s = %q, %v; want %q", round, k, got, err, v)
			}
		}
	}
	// One corruption at a time, as memory errors come: each key's read
	// repairs the copy it found corrupt before the next key is flipped.
	for k, v := range want {
		flipped := c.flip(0, k)
		for i := 1; flipped == 0 && i < len(c.nodes); i++ {
			flipped = c.flip(i, k) // a batch piece kept on another node
		}
		if flipped == 0 {
			t.Fatalf("DEBUG FLIP found no copy of %s on any node", k)
		}
		if got, err := via.Get(ctx, k).Result(); err != nil || got != v {
			t.Fatalf("GET %s after its copy was flipped = %q, %v; want %q", k, got, err, v)
		}
	}
	found, repaired := c.corruptionCounts()
	if found != int64(len(want)) || repaired != found {
		for i := range c.nodes {
			for _, line := range strings.Split(c.metrics(i), "\n") {
				if strings.HasPrefix(line, "memgest_corruption_") {
					t.Logf("node %d: %s", i, line)
				}
			}
		}
		t.Fatalf("memgest_corruption_*: %d found, %d repaired, for %d keys flipped", found, repaired, len(want))
	}
	readAll("again")
	if again, _ := c.corruptionCounts(); again != found {
		t.Fatalf("a second round of GETs found %d more corrupt copies: the repairs did not hold", again-found)
	}
}

// corruptionCounts sums every node's memgest_corruption_found_total and
// memgest_corruption_repaired_total over their labels.
func (c *testCluster) corruptionCounts() (found, repaired int64) {
	c.t.Helper()
	for i := range c.nodes {
		for _, line := range strings.Split(c.metrics(i), "\n") {
			var v float64
			switch {
			case strings.HasPrefix(line, "memgest_corruption_found_total{"):
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
				found += int64(v)
			case strings.HasPrefix(line, "memgest_corruption_repaired_total{"):
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
				repaired += int64(v)
			}
		}
	}
	return found, repaired
}

// TestScrubRepairsPackedCopies: the copies no read touches — every parity
// holder's copy of an open stripe:4+2 chunk, the holders' batch pieces of
// stripe:4+2@batch keys — flipped on every holder; the scrub finds and
// replaces them. Proven for the open chunk by flipping its coordinator's
// copy afterwards: only a holder's repaired copy can then restore it.
func TestScrubRepairsPackedCopies(t *testing.T) {
	c := startCluster(t, 7, clusterOptions{extra: []string{"--enable-debug-command", "--scrub-rate", "16777216"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	via := c.plainClient(1, 2)
	open := c.keyOn(t, rdb, 0, "scrub-open:")
	must(t, rdb.Do(ctx, "SET", open, "a value in an open chunk", "SCHEME", "stripe:4+2").Err())
	batch := c.keyOn(t, rdb, 0, "scrub-batch:")
	must(t, rdb.Do(ctx, "SET", batch, strings.Repeat("b", 300), "SCHEME", "stripe:4+2@batch").Err())
	holderCopies := int64(0)
	for i := 1; i < len(c.nodes); i++ {
		holderCopies += c.flip(i, open) + c.flip(i, batch)
	}
	if holderCopies < 2 {
		t.Fatalf("DEBUG FLIP found %d copies on the holders, want the open chunk's 2 at least", holderCopies)
	}
	waitCount(t, "the scrub to replace the flipped copies", func() int64 {
		_, repaired := c.corruptionCounts()
		return repaired
	}, holderCopies)
	if c.flip(0, open) != 1 {
		t.Fatal("the open chunk's coordinator holds no copy to flip")
	}
	if v, err := via.Get(ctx, open).Result(); err != nil || v != "a value in an open chunk" {
		t.Fatalf("GET %s with its chunk flipped after the scrub = %q, %v", open, v, err)
	}
	if v, err := via.Get(ctx, batch).Result(); err != nil || v != strings.Repeat("b", 300) {
		t.Fatalf("GET %s = %q, %v", batch, v, err)
	}
}
