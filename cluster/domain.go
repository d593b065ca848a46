package cluster

import (
	"slices"

	"github.com/memgest/memgest/scheme"
)

// This file is the one placement rule every choice of a node for a
// position follows (decision 0021): the initial placement (Place), a spare
// taking a failed node's places, a stand-in for a position whose node is
// down (Holders) and a rebalance's new placements (NextSteps). Each picks,
// among its candidates, the node whose zone holds the fewest of the
// positions chosen so far, then whose host holds the fewest, then the
// first in the order the choice had without domains. Applied position by
// position, every prefix of a placement (the positions a scheme of that
// width occupies) spreads as evenly over zones and hosts as the candidates
// allow: on distinct domains where there are enough of them. With no zones
// or hosts configured every candidate ties, and each choice is what it was
// before failure domains existed.

// MaxDomainLen bounds a node's zone and host names.
const MaxDomainLen = 64

// checkDomain refuses a zone or host name that is too long or holds
// characters other than letters, digits and ._-:/ (CLUSTER NODES and the
// status table separate fields with spaces).
func checkDomain(what, s string) *Error {
	if len(s) > MaxDomainLen {
		return errorf(ErrBadNode, "%s name is %d bytes, at most %d", what, len(s), MaxDomainLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':' || c == '/') {
			return errorf(ErrBadNode, "%s name %q: only letters, digits and . _ - : / are allowed", what, s)
		}
	}
	return nil
}

// CheckDomain refuses a zone or host name a node may not carry; what
// names it in the message ("zone", "host").
func CheckDomain(what, s string) error {
	if err := checkDomain(what, s); err != nil {
		return err
	}
	return nil
}

// hostKey names n's host for crowding: a node without a host is a host of
// its own, so hosts left unset never make nodes look co-located.
func (n Node) hostKey() string {
	if n.Host == "" {
		return "node " + string(n.ID)
	}
	return "host " + n.Host
}

// crowd counts, per zone and per host, the positions chosen so far.
type crowd struct {
	zones map[string]int
	hosts map[string]int
}

func newCrowd() *crowd { return &crowd{zones: map[string]int{}, hosts: map[string]int{}} }

func (c *crowd) add(n Node) {
	c.zones[n.Zone]++
	c.hosts[n.hostKey()]++
}

// less says whether a is less crowded than b: fewer chosen in its zone,
// else fewer on its host.
func (c *crowd) less(a, b Node) bool {
	if za, zb := c.zones[a.Zone], c.zones[b.Zone]; za != zb {
		return za < zb
	}
	return c.hosts[a.hostKey()] < c.hosts[b.hostKey()]
}

// leastCrowded is the index in cands of the least crowded node, the first
// such in cands' order; -1 when cands is empty.
func (c *crowd) leastCrowded(cands []Node) int {
	best := -1
	for i, n := range cands {
		if best < 0 || c.less(n, cands[best]) {
			best = i
		}
	}
	return best
}

// crowdOf counts the domains of the given nodes of m (unknown ids skipped).
func (m *Map) crowdOf(ids []NodeID) *crowd {
	c := newCrowd()
	for _, id := range ids {
		if n, ok := m.Node(id); ok {
			c.add(n)
		}
	}
	return c
}

// hasDomains says whether any node carries a zone or a host: without
// them every choice is the order's own.
func hasDomains(nodes []Node) bool {
	return slices.ContainsFunc(nodes, func(n Node) bool { return n.Zone != "" || n.Host != "" })
}

// DomainKind names what a failure domain is in m: "zone" when some node
// has a zone, else "host" when some node has a host, else "node" (each
// node its own domain: nothing says two nodes fail together).
func (m *Map) DomainKind() string {
	switch {
	case slices.ContainsFunc(m.Nodes, func(n Node) bool { return n.Zone != "" }):
		return "zone"
	case slices.ContainsFunc(m.Nodes, func(n Node) bool { return n.Host != "" }):
		return "host"
	}
	return "node"
}

// domainOf names n's failure domain of the given kind.
func domainOf(n Node, kind string) string {
	switch kind {
	case "zone":
		return n.Zone
	case "host":
		return n.hostKey()
	}
	return string(n.ID)
}

// DomainSpread is, for the positions a scheme of the given width occupies
// in shard sh (its holders now), the most any one failure domain
// (DomainKind) holds among the up holders, and how many positions are held
// by no up node (already lost).
func (m *Map) DomainSpread(sh *Shard, width int) (most, down int) {
	kind := m.DomainKind()
	count := map[string]int{}
	for _, h := range m.Holders(sh, width) {
		if h.State != Up {
			down++
			continue
		}
		d := domainOf(h, kind)
		count[d]++
		most = max(most, count[d])
	}
	return most, down
}

// SurvivesDomainLoss says whether every key of scheme sp, in every shard
// of m, survives the loss of every node of any one failure domain
// (DomainKind) at once: no domain holds more of a shard's positions than
// the scheme tolerates, counting positions already lost. A forming map
// has no placement yet: false.
func (m *Map) SurvivesDomainLoss(sp scheme.Spec) bool {
	if m.State != OK {
		return false
	}
	for i := range m.Shards {
		sh := &m.Shards[i]
		if sh.Retired {
			continue
		}
		if !m.ShardSurvivesDomainLoss(sh, sp) {
			return false
		}
	}
	return true
}

// Zones lists, once each in join order, the zones of m's nodes that are
// not gone ("" for nodes without one).
func (m *Map) Zones() []string {
	var out []string
	for _, n := range m.Nodes {
		if !n.Gone() && !slices.Contains(out, n.Zone) {
			out = append(out, n.Zone)
		}
	}
	return out
}

// ShardSurvivesDomainLoss is SurvivesDomainLoss for one shard: whether
// the keys of scheme sp in sh survive the loss of any one failure domain.
func (m *Map) ShardSurvivesDomainLoss(sh *Shard, sp scheme.Spec) bool {
	most, down := m.DomainSpread(sh, sp.Nodes())
	return most+down <= sp.Tolerance()
}
