package simcluster

import (
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// KeyOn returns the first key prefix0, prefix1, … that node i coordinates
// in the first live node's map.
func (c *Cluster) KeyOn(i int, prefix string) string {
	c.t.Helper()
	m := c.nodes[c.AnyLiveFirst()].srv.Map()
	for j := range 100_000 {
		k := fmt.Sprintf("%s%d", prefix, j)
		if nd, ok := m.Coordinator(keyslot.Of([]byte(k))); ok && nd.ID == c.nodes[i].id {
			return k
		}
	}
	c.t.Fatalf("simcluster: no key with prefix %q on node %d", prefix, i)
	return ""
}

// Coordinator is the index of the node coordinating key in the first live
// node's map (-1: none).
func (c *Cluster) Coordinator(key string) int {
	m := c.nodes[c.AnyLiveFirst()].srv.Map()
	nd, ok := m.Coordinator(keyslot.Of([]byte(key)))
	if !ok {
		return -1
	}
	return c.Index(nd.ID)
}

// AnyLiveFirst is the lowest index of a live node.
func (c *Cluster) AnyLiveFirst() int {
	for i, m := range c.nodes {
		if m.alive {
			return i
		}
	}
	c.t.Fatal("simcluster: no live node")
	return -1
}

// AnyLive draws a live node from the seed.
func (c *Cluster) AnyLive() int {
	live := c.LiveNodes()
	if len(live) == 0 {
		c.t.Fatal("simcluster: no live node")
	}
	return live[c.rand.IntN(len(live))]
}

// Fields maps the field names of a flat field/value reply (SCHEME.OF,
// SCHEME.VERIFY) to their values.
func Fields(r resp.Reply) map[string]resp.Reply {
	out := map[string]resp.Reply{}
	items := r.Items()
	for j := 0; j+1 < len(items); j += 2 {
		out[items[j].Text()] = items[j+1]
	}
	return out
}

// MapNode is node i as the first live node's map has it.
func (c *Cluster) MapNode(i int) cluster.Node {
	nd, _ := c.nodes[c.AnyLiveFirst()].srv.Map().Node(c.nodes[i].id)
	return nd
}

// LiveNodes lists the nodes started and not killed, by index.
func (c *Cluster) LiveNodes() []int {
	var live []int
	for i, m := range c.nodes {
		if m.alive {
			live = append(live, i)
		}
	}
	return live
}
