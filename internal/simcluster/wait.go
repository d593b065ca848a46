package simcluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memgest/memgest/cluster"
)

// pollEvery is how often a wait looks at its condition again.
const pollEvery = 5 * time.Millisecond

// Until polls cond until it holds, failing the test after 30 s (real
// time) with what, and what cond's last look found.
func (c *Cluster) Until(what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, found := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("simcluster: %s: not after %s (%s)", what, waitTimeout, found)
		}
		time.Sleep(pollEvery)
	}
}

// WaitMap waits until every live node's map satisfies cond.
func (c *Cluster) WaitMap(what string, cond func(*cluster.Map) bool) {
	c.t.Helper()
	c.Until(what, func() (bool, string) {
		for i, m := range c.nodes {
			if mp := m.srv.Map(); m.alive && !cond(mp) {
				return false, fmt.Sprintf("node %d at epoch %d: %s", i, mp.Epoch, c.describe(mp))
			}
		}
		return true, ""
	})
}

// FailOver moves the fake clock on, a quarter of the failure timeout at a
// time, until the control plane has marked every victim failed (killed or
// cut off beforehand), and waits until every live node's map says so.
// After each step it waits until every other live node has renewed its
// lease at the new time, so that only the victims fall silent.
func (c *Cluster) FailOver(victims ...int) {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !c.markedByAll(victims) {
		if time.Now().After(deadline) {
			c.t.Fatalf("simcluster: nodes %v not marked failed after %s", victims, waitTimeout)
		}
		c.awaitRenewals(c.clock.Advance(c.opts.FailureTimeout/4), victims)
	}
	c.tracer.add("failed over %v", victims)
}

// markedByAll says whether every live node other than the victims has them
// failed in its map.
func (c *Cluster) markedByAll(victims []int) bool {
	for i, m := range c.nodes {
		if !m.alive || slices.Contains(victims, i) {
			continue
		}
		mp := m.srv.Map()
		for _, v := range victims {
			if nd, ok := mp.Node(c.nodes[v].id); !ok || nd.State != cluster.Failed {
				return false
			}
		}
	}
	return true
}

// awaitRenewals waits until every live node but those excepted, and those
// the map has failed, has renewed its lease with a heartbeat sent at now or
// later.
func (c *Cluster) awaitRenewals(now time.Time, except []int) {
	c.t.Helper()
	c.Until("leases renewed at "+now.Format(time.StampMilli), func() (bool, string) {
		for i, m := range c.nodes {
			if !m.alive || slices.Contains(except, i) || c.failedInMap(i) {
				continue
			}
			if m.srv.LeaseRenewedAt().Before(now) {
				return false, fmt.Sprintf("node %d renewed at %s", i, m.srv.LeaseRenewedAt().Format(time.StampMilli))
			}
		}
		return true, ""
	})
}

// failedInMap says whether node i is failed in its own map (it then gets
// no lease until it is readmitted).
func (c *Cluster) failedInMap(i int) bool {
	nd, ok := c.nodes[i].srv.Map().Node(c.nodes[i].id)
	return ok && nd.State == cluster.Failed
}

// Settle waits until the cluster is at rest — every live node at the same
// epoch, no shard recovering, restoring stripes or awaiting a rebuild, the
// voters replaced and grown to the map's target — and records step with the map's epoch and node states
// in the trace.
func (c *Cluster) Settle(step string) {
	c.t.Helper()
	c.Until("settle after "+step, func() (bool, string) {
		var first *cluster.Map
		for i, m := range c.nodes {
			if !m.alive {
				continue
			}
			mp := m.srv.Map()
			if first == nil {
				first = mp
			}
			if mp.Epoch != first.Epoch || !atRest(mp) {
				return false, fmt.Sprintf("node %d at epoch %d: %s", i, mp.Epoch, c.describe(mp))
			}
		}
		return first != nil, ""
	})
	c.tracer.add("%s: %s", step, c.States())
}

// atRest says whether m has no recovery, stripe restore or rebuild under
// way, and as many live voters as it calls for (cluster.VoterTarget:
// failed voters replaced, the group grown to the schemes' tolerance).
func atRest(m *cluster.Map) bool {
	if m.State != cluster.OK || m.RecoveringShards() > 0 || m.StripesPendingShards() > 0 || m.RebuildingShards() > 0 {
		return false
	}
	voters := 0
	for _, nd := range m.Nodes {
		if nd.State != cluster.Failed && nd.Voter {
			voters++
		}
	}
	return voters >= cluster.VoterTarget(m)
}

// States describes the first live node's map: its epoch, each node's
// state (by index, in join order, * for a voter) and each shard's
// coordinator.
func (c *Cluster) States() string {
	for _, m := range c.nodes {
		if m.alive {
			mp := m.srv.Map()
			return fmt.Sprintf("epoch %d %s", mp.Epoch, c.describe(mp))
		}
	}
	return "no live node"
}

// describe is m's node states and shard coordinators.
func (c *Cluster) describe(m *cluster.Map) string {
	var b strings.Builder
	b.WriteString("nodes")
	for _, nd := range m.Nodes {
		voter := ""
		if nd.Voter {
			voter = "*"
		}
		fmt.Fprintf(&b, " n%d:%s%s", c.Index(nd.ID), nd.State, voter)
	}
	b.WriteString(" shards")
	for _, sh := range m.Shards {
		coord, _ := m.CoordinatorOf(&sh)
		fmt.Fprintf(&b, " %d@n%d", sh.ID, c.Index(coord.ID))
		if sh.Recovering || sh.StripesPending || len(sh.Rebuild) > 0 {
			fmt.Fprintf(&b, "(rec %v stripes %v rebuild %v)", sh.Recovering, sh.StripesPending, sh.Rebuild)
		}
	}
	return b.String()
}

// AwaitDirectory waits until the live nodes keep at least want key-directory
// entries between them (two per key created in a scheme other than stripe):
// a coordinator sends them in the background after the commit, and a key
// created just before its coordinator dies with every piece may go
// unnamed (docs/failure-model.md, "The key directory").
func (c *Cluster) AwaitDirectory(want int) {
	c.t.Helper()
	c.Until(fmt.Sprintf("%d directory entries", want), func() (bool, string) {
		got := 0
		for _, m := range c.nodes {
			if m.alive {
				got += m.srv.DirectoryEntries()
			}
		}
		return got >= want, fmt.Sprintf("%d entries", got)
	})
}

// Advance moves the fake clock on by d, in steps of at most a quarter of
// the failure timeout, waiting after each until every live node has
// renewed its lease at the new time, so that the step fails no node.
func (c *Cluster) Advance(d time.Duration) {
	c.t.Helper()
	c.tracer.add("advance %s", d)
	for step := c.opts.FailureTimeout / 4; d > 0; d -= step {
		c.awaitRenewals(c.clock.Advance(min(step, d)), nil)
	}
}
