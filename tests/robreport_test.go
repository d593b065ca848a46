package tests

// The robustness suite's report: one row per nemesis.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// robReport is the markdown report of a set of runs: a table per nemesis.
func robReport(results []robResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | runs | operations | indeterminate | illegal histories | inconclusive | lost acknowledged writes | keys lost beyond tolerance | piece mismatches | stray pieces | failpoints reached | longest hot-key gap p50 / max | harness failures |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	var total robResult
	runs := 0
	for _, nm := range nemeses {
		var rs []robResult
		for _, res := range results {
			if res.nemesis == nm.name {
				rs = append(rs, res)
			}
		}
		if len(rs) == 0 {
			continue
		}
		row := sumResults(rs)
		runs += len(rs)
		total = sumResults([]robResult{total, row})
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %d |\n", nm.name, len(rs), row.ops, row.indeterminate,
			len(row.illegal), len(row.inconclusive), row.lostAcked, row.lostKeys, len(row.mismatches), row.stray, row.reached, gapSummary(rs), countHarness(rs))
	}
	fmt.Fprintf(&b, "| **total** | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | | %d |\n", runs, total.ops, total.indeterminate,
		len(total.illegal), len(total.inconclusive), total.lostAcked, total.lostKeys, len(total.mismatches), total.stray, total.reached, countHarness(results))
	for _, res := range results {
		if res.failed() || len(res.inconclusive) > 0 {
			fmt.Fprintf(&b, "\nseed %d (%s): illegal %v, inconclusive %v, lost %d, mismatches %v, stray %d %s%s\n", res.seed, res.nemesis,
				res.illegal, res.inconclusive, res.lostAcked, res.mismatches, res.stray, res.harness, artifactNote(res))
		}
	}
	return b.String()
}

// sumResults adds up runs; illegal and mismatches count runs with any.
func sumResults(rs []robResult) robResult {
	var s robResult
	for _, r := range rs {
		s.ops += r.ops
		s.indeterminate += r.indeterminate
		s.lostAcked += r.lostAcked
		s.lostKeys += r.lostKeys
		s.stray += r.stray
		s.reached += r.reached
		s.illegal = append(s.illegal, r.illegal...)
		s.inconclusive = append(s.inconclusive, r.inconclusive...)
		s.mismatches = append(s.mismatches, r.mismatches...)
	}
	return s
}

func countHarness(rs []robResult) int {
	n := 0
	for _, r := range rs {
		if r.harness != "" {
			n++
		}
	}
	return n
}

func gapSummary(rs []robResult) string {
	gaps := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		gaps = append(gaps, r.longestGap)
	}
	slices.Sort(gaps)
	return fmt.Sprintf("%.1f s / %.1f s", gaps[len(gaps)/2].Seconds(), gaps[len(gaps)-1].Seconds())
}
