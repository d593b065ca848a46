package reliability

import (
	"errors"
	"fmt"
	"math"
)

// HoursPerYear is the year of mission times and MTTFs: 365.25 days.
const HoursPerYear = 8766

// Cluster is what the model knows of the nodes. Times are in hours.
type Cluster struct {
	// Nodes is the number of nodes, in placement-ring order.
	Nodes int
	// NodeMTTF is the mean time to failure of one node, on its own.
	NodeMTTF float64
	// Rebuild is the time to re-create one failed node's pieces once the
	// failure is known; Detection the time before it is known (the failure
	// detector's timeout). A failed node is back after Detection+Rebuild on
	// average, exponentially distributed as the model needs.
	Rebuild, Detection float64
	// ParallelRebuild rebuilds every failed node at once, each at the rate
	// of one; by default one node is rebuilt at a time (Ring A.1, KVMD §5.1).
	ParallelRebuild bool
	// Hosts, when set, names the host of each node (len Nodes); HostMTTF is
	// the mean time between failures that take a whole host, all its nodes
	// at once (power, kernel, a rack switch), on top of the nodes' own.
	Hosts    []int
	HostMTTF float64
}

// Share is a scheme and the fraction of the logical bytes it holds.
type Share struct {
	Scheme   Scheme
	Fraction float64
}

// Mix is the schemes a cluster holds. The data is lost when any scheme's
// is; a single scheme is Mix{{s, 1}}.
type Mix []Share

// Single is the mix of one scheme.
func Single(s Scheme) Mix { return Mix{{Scheme: s, Fraction: 1}} }

// Overhead is the mix's stored bytes per logical byte.
func (m Mix) Overhead() float64 {
	var o, f float64
	for _, s := range m {
		o += s.Fraction * s.Scheme.Overhead()
		f += s.Fraction
	}
	return o / f
}

// Tolerance is the number of failed nodes every key of the mix survives.
func (m Mix) Tolerance() int {
	t := math.MaxInt
	for _, s := range m {
		t = min(t, s.Scheme.Tolerance())
	}
	return t
}

// Name joins the schemes' names.
func (m Mix) Name() string {
	name := ""
	for i, s := range m {
		if i > 0 {
			name += " + "
		}
		name += s.Scheme.Name
		if len(m) > 1 {
			name += fmt.Sprintf(" (%.0f%%)", 100*s.Fraction)
		}
	}
	return name
}

// RebuildHours is the time to rebuild a node holding bytes at rate bytes
// per second.
func RebuildHours(bytes, rate float64) float64 { return bytes / rate / 3600 }

func (c Cluster) validate(mix Mix) error {
	switch {
	case c.Nodes < 1 || c.Nodes > 64:
		return fmt.Errorf("reliability: %d nodes: the model takes 1 to 64", c.Nodes)
	case !(c.NodeMTTF > 0) || math.IsInf(c.NodeMTTF, 0):
		return errors.New("reliability: node MTTF must be a positive time")
	case !(c.Rebuild > 0) || math.IsInf(c.Rebuild, 0):
		return errors.New("reliability: rebuild time must be positive")
	case c.Detection < 0 || math.IsInf(c.Detection, 0):
		return errors.New("reliability: detection time must not be negative")
	case c.HostMTTF < 0 || (c.HostMTTF > 0 && len(c.Hosts) != c.Nodes):
		return errors.New("reliability: host failures need a host for every node and a positive host MTTF")
	case len(c.Hosts) != 0 && len(c.Hosts) != c.Nodes:
		return fmt.Errorf("reliability: %d hosts named for %d nodes", len(c.Hosts), c.Nodes)
	case len(mix) == 0:
		return errors.New("reliability: no scheme")
	}
	for _, s := range mix {
		if err := s.Scheme.validate(); err != nil {
			return err
		}
		if s.Scheme.Width() > c.Nodes {
			return fmt.Errorf("reliability: %s needs %d nodes, the cluster has %d", s.Scheme.Name, s.Scheme.Width(), c.Nodes)
		}
		if !(s.Fraction > 0) {
			return fmt.Errorf("reliability: %s: share must be positive", s.Scheme.Name)
		}
	}
	return nil
}
