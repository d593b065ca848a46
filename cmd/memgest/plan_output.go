package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/server/commands"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// writeJSON writes v as indented JSON (memgest plan and status --json).
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printPlan writes the inputs, one line per scheme, the target's answer
// and the sweep.
func printPlan(out io.Writer, rep planReport) {
	in := rep.Inputs
	fmt.Fprintf(out, "%d nodes, node MTTF %s, detection %s, mission %s, %s\n", in.Nodes, formatHours(in.NodeMTTFHours),
		formatHours(in.DetectionHours), formatHours(in.MissionHours), rebuildInput(in))
	if in.Hosts > 0 {
		fmt.Fprintf(out, "%d hosts (%s), each failing whole every %s on average\n", in.Hosts, in.HostLayout, formatHours(in.HostMTTFHours))
	}
	if in.FromCluster != "" {
		fmt.Fprintf(out, "from the cluster at %s\n", in.FromCluster)
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "SCHEME\tTOLERATES\tBYTES/LOGICAL B\tREBUILD\tMTTDL\tP(LOSS IN %s)\tNINES\tAVAILABILITY\n", formatHours(in.MissionHours))
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%s\t%s\t%s\t%s\t%s\n", r.Scheme, r.Tolerates, r.Overhead, formatHours(r.RebuildHours),
			formatHours(r.MTTDLHours), formatProbability(r.LossProbability), formatNines(r.Nines), formatAvailability(r.Availability))
	}
	w.Flush()
	if rep.Target != nil {
		if c := rep.Cheapest; c != nil {
			fmt.Fprintf(out, "\ncheapest scheme with %g nines: %s, %.2f bytes per logical byte (%s nines)\n", *rep.Target, c.Scheme, c.Overhead, formatNines(c.Nines))
		} else {
			fmt.Fprintf(out, "\nno scheme listed reaches %g nines: try wider schemes (--scheme stripe:8+3), a faster rebuild or more reliable nodes\n", *rep.Target)
		}
	}
	printSweep(out, rep)
}

func rebuildInput(in planInputs) string {
	switch {
	case in.RebuildHours > 0:
		return "rebuild " + formatHours(in.RebuildHours) + " per node"
	case in.BytesPerNode > 0:
		return fmt.Sprintf("rebuild at %s/s of %s per node", commands.HumanBytes(int64(in.RebuildRate)), commands.HumanBytes(int64(in.BytesPerNode)))
	}
	return fmt.Sprintf("rebuild at %s/s, %s logical bytes × each scheme's overhead over the nodes", commands.HumanBytes(int64(in.RebuildRate)), commands.HumanBytes(int64(in.LogicalBytes)))
}

// printSweep writes, per scheme, the nines with each input scaled.
func printSweep(out io.Writer, rep planReport) {
	if len(rep.Sweep) == 0 {
		return
	}
	fmt.Fprintln(out, "\nnines with one input scaled (the others as given):")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"SCHEME", "INPUT"}
	for _, f := range sweepFactors {
		header = append(header, fmt.Sprintf("×%g", f))
	}
	fmt.Fprintln(w, strings.Join(header, "\t")+"\tAS GIVEN")
	for _, r := range rep.Results {
		rows := map[string][]string{}
		var order []string
		for _, s := range rep.Sweep[r.Scheme] {
			if rows[s.Input] == nil {
				order = append(order, s.Input)
			}
			rows[s.Input] = append(rows[s.Input], formatNines(s.Nines))
		}
		for _, input := range order {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Scheme, input, strings.Join(rows[input], "\t"), formatNines(r.Nines))
		}
	}
	w.Flush()
}

func formatNines(n float64) string {
	if n >= reliability.MaxNines {
		return fmt.Sprintf("≥%d", reliability.MaxNines)
	}
	return fmt.Sprintf("%.1f", n)
}

func formatProbability(p float64) string {
	if p >= 0.01 {
		return fmt.Sprintf("%.2f", p)
	}
	return fmt.Sprintf("%.1e", p)
}

// formatAvailability writes an availability as a percentage with as many
// digits as its nines need.
func formatAvailability(a float64) string {
	if a >= 1 {
		return "100%"
	}
	digits := min(max(int(math.Ceil(-math.Log10(1-a)))-1, 0), 12)
	return fmt.Sprintf("%.*f%%", digits, 100*a)
}

// plotNines draws nines against bytes per logical byte, one labelled
// point per result.
func plotNines(file string, rep planReport) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d nodes, node MTTF %s, %s", rep.Inputs.Nodes, formatHours(rep.Inputs.NodeMTTFHours), rebuildInput(rep.Inputs))
	p.X.Label.Text = "bytes stored per logical byte"
	p.Y.Label.Text = fmt.Sprintf("nines of P(no loss in %s)", formatHours(rep.Inputs.MissionHours))
	p.Add(plotter.NewGrid())
	xys := make(plotter.XYs, len(rep.Results))
	labels := make([]string, len(rep.Results))
	for i, r := range rep.Results {
		xys[i] = plotter.XY{X: r.Overhead, Y: math.Min(r.Nines, 40)}
		labels[i] = r.Scheme
	}
	points, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	points.Color = color.RGBA{R: 200, A: 255}
	points.Radius = vg.Points(3)
	names, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	for i := range names.TextStyle {
		names.TextStyle[i].XAlign = -0.05
	}
	p.Add(points, names)
	p.X.Max += 0.3 * (p.X.Max - p.X.Min) // room for the labels
	if rep.Target != nil {
		line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: *rep.Target}, {X: p.X.Max, Y: *rep.Target}})
		if err == nil {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("target: %g nines", *rep.Target), line)
		}
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, file); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
