package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgest/memgest/cluster"
)

// This file is the node's loop for a temperature policy (SCHEME.POLICY
// TEMPERATURE, decision 0010): keys used lately stay in the policy's hot
// scheme; keys idle longer than its idle time move to its cold scheme, in
// the background, at most --policy-move-rate keys per second; a cold key
// read PromoteReads times within the idle time moves back (a write moves
// it back at once, core.pickScheme). Idle keys are found by a scan of the
// primary store that resumes where it stopped, judged by the core's access
// sketch (core/temperature.go): like Redis's active expiry, a bounded
// amount of work per round and no timer per key. Every move is an
// ordinary move through the write path (core.MoveForPolicy), so a key is
// never absent and histories stay linearizable.

const (
	// temperatureEvery is how often the loop runs a round.
	temperatureEvery = 100 * time.Millisecond
	// temperatureScan bounds the records a round looks at: a pass over a
	// million keys takes 10 s.
	temperatureScan = 1000
)

// temperatureLoop runs the policy's rounds until ctx ends. Moves are paid
// for by tokens, --policy-move-rate per second, saved up for at most one
// second; keys read back come first.
func (n *Node) temperatureLoop(ctx context.Context) {
	rate := float64(n.Cfg.PolicyMoveRate)
	t := time.NewTicker(temperatureEvery)
	defer t.Stop()
	tokens, owned := 0.0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m := n.Ctl.Map()
		p := m.Policy.Temperature()
		if p == nil {
			n.DropSketch()
			tokens = 0
			continue
		}
		if o := n.shardsCoordinated(m); o != owned {
			if o > owned {
				n.TookOver()
			}
			owned = o
		}
		if rate == 0 || !n.Serving() || !compactable(m) {
			continue
		}
		tokens = min(tokens+rate*temperatureEvery.Seconds(), rate)
		tokens -= float64(n.warmRound(ctx, p, int(tokens)))
		tokens -= float64(n.coolRound(ctx, p, int(tokens)))
	}
}

// shardsCoordinated counts the shards this node coordinates in m.
func (n *Node) shardsCoordinated(m *cluster.Map) int {
	count := 0
	for _, sh := range m.Shards {
		if c, ok := m.CoordinatorOf(&sh); ok && c.ID == n.NodeID {
			count++
		}
	}
	return count
}

// warmRound moves back to the hot scheme up to budget cold keys read
// often, and returns how many moves it tried.
func (n *Node) warmRound(ctx context.Context, p *cluster.Policy, budget int) int {
	tried := 0
	for ; tried < budget; tried++ {
		select {
		case key := <-n.Temp.Promote:
			n.policyMove(ctx, p, key, false)
		default:
			return tried
		}
	}
	return tried
}

// coolRound moves up to budget idle keys of one scan step to the cold
// scheme, and returns how many moves it tried.
func (n *Node) coolRound(ctx context.Context, p *cluster.Policy, budget int) int {
	if budget <= 0 {
		return 0
	}
	idle := n.SampleIdle(p, temperatureScan, budget)
	for _, key := range idle {
		if ctx.Err() != nil {
			break
		}
		n.policyMove(ctx, p, key, true)
	}
	return len(idle)
}

func (n *Node) policyMove(ctx context.Context, p *cluster.Policy, key []byte, toCold bool) {
	ctx, cancel := context.WithTimeout(ctx, 4*n.Cfg.PeerTimeout)
	defer cancel()
	if _, err := n.MoveForPolicy(ctx, p, key, toCold); err != nil {
		n.Log.Debug("temperature policy: a move failed", "key", string(key), "to_cold", toCold, "err", err)
	}
}

// policyCollector exposes a temperature policy's moves on this node.
type policyCollector struct {
	n            *Node
	moves, saved *prometheus.Desc
}

func (n *Node) policyCollector() prometheus.Collector {
	return &policyCollector{n: n,
		moves: prometheus.NewDesc("memgest_policy_moves_total",
			"Keys the temperature policy moved on this node (their coordinator), by direction: to_cold (idle), to_hot (written, or read often).", []string{"direction"}, nil),
		saved: prometheus.NewDesc("memgest_policy_bytes_saved",
			"Memory the temperature policy's moves on this node saved, net: each move's key and value bytes times the difference of its schemes' overheads.", nil, nil),
	}
}

func (c *policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.moves
	ch <- c.saved
}

func (c *policyCollector) Collect(ch chan<- prometheus.Metric) {
	t := &c.n.Temp
	ch <- prometheus.MustNewConstMetric(c.moves, prometheus.CounterValue, float64(t.ToCold.Load()), "to_cold")
	ch <- prometheus.MustNewConstMetric(c.moves, prometheus.CounterValue, float64(t.ToHot.Load()), "to_hot")
	ch <- prometheus.MustNewConstMetric(c.saved, prometheus.GaugeValue, float64(t.BytesSaved.Load()))
}
