package reliability

import (
	"fmt"
	"math"
)

// DefaultDepthBeyondTolerance is how many failures past the mix's
// tolerance the chain follows before it counts one more as a loss.
const DefaultDepthBeyondTolerance = 3

// Result is the model's answer for one mix on one cluster.
type Result struct {
	// Scheme names the mix.
	Scheme string `json:"scheme"`
	// Tolerates is the number of node failures every key survives.
	Tolerates int `json:"tolerates"`
	// Overhead is stored bytes per logical byte.
	Overhead float64 `json:"bytes_per_logical_byte"`
	// RebuildHours is the time from a node's failure to its pieces being
	// whole again: detection plus rebuild.
	RebuildHours float64 `json:"rebuild_hours"`
	// MTTDLHours is the mean time until some key is lost.
	MTTDLHours float64 `json:"mttdl_hours"`
	// MissionHours is the time LossProbability is over.
	MissionHours float64 `json:"mission_hours"`
	// LossProbability is the chance that some key is lost within the
	// mission; Nines is −log10 of it (at most MaxNines).
	LossProbability float64 `json:"loss_probability"`
	Nines           float64 `json:"nines"`
	// Availability is the expected fraction of the mission in which a
	// key can be read: not while its coordinator's failure is undetected
	// (a failover follows), and not once data is lost.
	Availability float64 `json:"availability"`
	// Method is how LossProbability was computed; Chain is "exact"
	// (states are failed-node sets) or "lumped" (states count failed
	// nodes, Ring A.2); States and Depth are the chain's size and the
	// number of nodes down at once it follows.
	Method Method `json:"method"`
	Chain  string `json:"chain"`
	States int    `json:"states"`
	Depth  int    `json:"depth"`
}

// Evaluate runs the model for mix on c over mission hours.
func Evaluate(c Cluster, mix Mix, mission float64) (Result, error) {
	if err := c.validate(mix); err != nil {
		return Result{}, err
	}
	if !(mission > 0) || math.IsInf(mission, 0) {
		return Result{}, fmt.Errorf("reliability: mission time must be positive")
	}
	ch, err := buildChain(c, mix, mix.Tolerance()+DefaultDepthBeyondTolerance)
	if err != nil {
		return Result{}, err
	}
	tau, err := ch.mttdl()
	if err != nil {
		return Result{}, err
	}
	loss, method := ch.lossWithin(mission, tau)
	return Result{
		Scheme:          mix.Name(),
		Tolerates:       mix.Tolerance(),
		Overhead:        mix.Overhead(),
		RebuildHours:    c.Rebuild + c.Detection,
		MTTDLHours:      tau,
		MissionHours:    mission,
		LossProbability: loss,
		Nines:           nines(loss),
		Availability:    availability(c, mix, mission, tau),
		Method:          method,
		Chain:           ch.kind(),
		States:          ch.transient(),
		Depth:           ch.depth,
	}, nil
}

// availability is 1 minus the time a key spends behind an undetected
// coordinator failure (its coordinator's failures, each costing the
// detection time, for schemes that survive one) minus the mean loss
// probability over the mission.
func availability(c Cluster, mix Mix, mission, mttdl float64) float64 {
	down := 0.0
	if mix.Tolerance() > 0 {
		rate := 1 / c.NodeMTTF
		if c.HostMTTF > 0 {
			rate += 1 / c.HostMTTF
		}
		down = rate * c.Detection
	}
	return max(0, 1-down-meanLoss(mission, mttdl))
}

// Compare evaluates each scheme alone on c.
func Compare(c Cluster, schemes []Scheme, mission float64) ([]Result, error) {
	out := make([]Result, 0, len(schemes))
	for _, s := range schemes {
		r, err := Evaluate(c, Single(s), mission)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Cheapest is the result with the least overhead whose nines reach
// target (ties to more nines), and false if none does.
func Cheapest(results []Result, target float64) (Result, bool) {
	var best Result
	found := false
	for _, r := range results {
		if r.Nines < target {
			continue
		}
		if !found || r.Overhead < best.Overhead || (r.Overhead == best.Overhead && r.Nines > best.Nines) {
			best, found = r, true
		}
	}
	return best, found
}

// Sensitivity is the nines of a mix with one input scaled.
type Sensitivity struct {
	// Input is "node-mttf", "rebuild", "detection" or "host-mttf".
	Input  string  `json:"input"`
	Factor float64 `json:"factor"`
	Nines  float64 `json:"nines"`
}

// sweepInput is one input Sweep scales.
type sweepInput struct {
	name  string
	scale func(*Cluster, float64)
}

// Sweep evaluates mix with each input of c scaled by each factor in turn,
// the others as given: which input the nines depend on most.
func Sweep(c Cluster, mix Mix, mission float64, factors []float64) ([]Sensitivity, error) {
	inputs := []sweepInput{{"detection", func(c *Cluster, f float64) { c.Detection *= f }}}
	if c.HostMTTF > 0 {
		inputs = append(inputs, sweepInput{"host-mttf", func(c *Cluster, f float64) { c.HostMTTF *= f }})
	}
	inputs = append(inputs,
		sweepInput{"node-mttf", func(c *Cluster, f float64) { c.NodeMTTF *= f }},
		sweepInput{"rebuild", func(c *Cluster, f float64) { c.Rebuild *= f }})
	var out []Sensitivity
	for _, in := range inputs {
		for _, f := range factors {
			scaled := c
			in.scale(&scaled, f)
			r, err := Evaluate(scaled, mix, mission)
			if err != nil {
				return nil, err
			}
			out = append(out, Sensitivity{Input: in.name, Factor: f, Nines: r.Nines})
		}
	}
	return out, nil
}
