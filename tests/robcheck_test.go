package tests

// The robustness suite's checks (robustness_test.go runs the scenarios):
// piece agreement and stray pieces, porcupine on each key's history, and
// lost acknowledged writes.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/memgest/memgest/keyslot"
	"github.com/redis/go-redis/v9"
)

// verifyPieces runs SCHEME.VERIFY on every key and compares the pieces it
// checked, per scheme, with the pieces the nodes hold (SCHEME.INFO): any
// difference is a stray piece (garbage a fault left, or a piece missing).
// Packed keys (stripe, hybrid) hold no pieces: their chunks are checked
// against parity and replica copies, the keys' by SCHEME.VERIFY and every
// chunk by DEBUG STRIPES on each live node.
func (r *robRun) verifyPieces() (mismatches []string, stray int) {
	cl := r.admin(r.watcher())
	ctx := ctxT(r.t)
	checked := map[string]int64{}
	committed := map[string]string{} // key → "scheme version"
	r.committed = committed
	for _, k := range robKeys {
		rep, err := cl.Do(ctx, "SCHEME.VERIFY", k).Slice()
		if errors.Is(err, redis.Nil) || err != nil && strings.HasPrefix(err.Error(), "LOST") {
			continue
		}
		if err != nil {
			mismatches = append(mismatches, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		f := flatMap(rep)
		checked[f["scheme"].(string)] += f["pieces"].(int64)
		committed[k] = fmt.Sprintf("%s %d", f["scheme"], f["version"])
	}
	for _, i := range r.live() {
		res, err := r.admin(i).Do(ctx, "DEBUG", "STRIPES").Slice()
		switch {
		case err != nil:
			mismatches = append(mismatches, fmt.Sprintf("node %d: DEBUG STRIPES: %v", i, err))
		case len(res) != 2: // checked, unavailable (a failed position with no node to take it), problems...
			mismatches = append(mismatches, fmt.Sprintf("node %d: DEBUG STRIPES: %v", i, res))
		}
	}
	for _, g := range robGroups {
		for _, sch := range g.schemes {
			if strings.HasPrefix(sch, "stripe:") || strings.HasPrefix(sch, "hybrid:") {
				continue
			}
			info, err := cl.Do(ctx, "SCHEME.INFO", sch).Slice()
			if err != nil {
				continue // never used in this run
			}
			held := flatMap(info)["pieces"].(int64)
			if d := held - checked[sch]; d != 0 {
				stray += int(max(d, -d))
			}
		}
	}
	return mismatches, stray
}

// describeStray logs, as events, the pieces the live nodes hold that are
// not of their key's committed version (DEBUG PIECES).
func (r *robRun) describeStray() {
	committed := r.committed
	for _, i := range r.live() {
		rows, err := r.admin(i).Do(ctxT(r.t), "DEBUG", "PIECES").Slice()
		if err != nil {
			r.event("node %d: DEBUG PIECES: %v", i, err)
			continue
		}
		for _, row := range rows {
			f := row.([]any)
			key, sch, version, kind := f[0].(string), f[1].(string), f[2].(int64), f[3].(string)
			want, live := committed[key]
			switch {
			case f[3] == "directory":
			case !live:
				r.event("stray: node %d holds %s %s v%d of %s, which is deleted or lost", i, kind, sch, version, key)
			case kind == "shard" && want != fmt.Sprintf("%s %d", sch, version), kind == "replica" && !strings.HasPrefix(want, sch+" "):
				r.event("stray: node %d holds %s %s v%d of %s, committed %s", i, kind, sch, version, key, want)
			}
		}
	}
}

// flatMap reads a RESP2 field/value array.
func flatMap(a []any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(a); i += 2 {
		if k, ok := a[i].(string); ok {
			m[k] = a[i+1]
		}
	}
	return m
}

// check runs porcupine on each key's history (strict, lossy, or strict
// but in a lost slot range: markable) and writes the histories of the keys
// it refuses or cannot decide, with the seed, to the artifacts directory.
func (r *robRun) check(strict, lossy, markable []porcupine.Operation) (illegal, inconclusive []string, artifacts string) {
	for _, c := range []struct {
		what    string
		model   porcupine.Model
		history []porcupine.Operation
	}{{"strict", kvModel, strict}, {"lossy", lossyModel.ToModel(), lossy}, {"markable", markableModel.ToModel(), markable}} {
		var bad []porcupine.Operation
		var info porcupine.LinearizationInfo
		parts := c.model.Partition(c.history)
		for i, v := range checkKeys(c.model, parts) {
			ops := parts[i]
			switch v.res {
			case porcupine.Ok:
				continue
			case porcupine.Illegal:
				illegal = append(illegal, ops[0].Input.(kvInput).key)
			default:
				inconclusive = append(inconclusive, ops[0].Input.(kvInput).key)
			}
			bad, info = append(bad, ops...), v.info
		}
		if len(bad) > 0 {
			artifacts = r.writeArtifacts(c.what, c.model, bad, info, illegal)
		}
	}
	sort.Strings(illegal)
	sort.Strings(inconclusive)
	return illegal, inconclusive, artifacts
}

// verdict is porcupine's answer for one key's history.
type verdict struct {
	res  porcupine.CheckResult
	info porcupine.LinearizationInfo
}

// checkKeys checks each key's history (a partition) on its own, as many at
// once as there are processors: a key porcupine cannot decide costs its
// -robustness.checktime beside the others instead of after them.
func checkKeys(model porcupine.Model, parts [][]porcupine.Operation) []verdict {
	out := make([]verdict, len(parts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i].res, out[i].info = porcupine.CheckOperationsVerbose(model, parts[i], *robCheckTimeFlag)
			}
		}()
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// writeArtifacts writes a failed check's seed, events, history and
// porcupine visualisation, and returns the directory.
func (r *robRun) writeArtifacts(what string, model porcupine.Model, history []porcupine.Operation, info porcupine.LinearizationInfo, illegal []string) string {
	dir := *robArtifactsFlag
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "memgest-robustness")
	}
	dir = filepath.Join(dir, fmt.Sprintf("seed-%d", r.seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	note := fmt.Sprintf("seed %d; replay: make robustness SEED=%d\n%s\n", r.seed, r.seed, strings.Join(r.events, "\n"))
	_ = os.WriteFile(filepath.Join(dir, "seed.txt"), []byte(note), 0o644)
	_ = os.Rename(writeHistory(history, what+" history, seed "+fmt.Sprint(r.seed), illegal), filepath.Join(dir, what+"-history.txt"))
	if f, err := os.Create(filepath.Join(dir, what+"-history.html")); err == nil {
		_ = porcupine.Visualize(model, info, f)
		f.Close()
	}
	return dir
}

// robHistory is the operations of one run.
type robHistory struct {
	mu  sync.Mutex
	ops []porcupine.Operation
}

func (h *robHistory) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

func (h *robHistory) indeterminate() int {
	n := 0
	for _, op := range h.ops {
		if op.Output.(kvOutput).unknown {
			n++
		}
	}
	return n
}

// split separates the keys a run with failures failed nodes must not lose
// (strict) from those it may (lossy); of the strict ones, those whose slot
// is in one of the lost slot ranges (first and last slot) the cluster
// reported may also answer as maybe lost while absent (markable).
func (h *robHistory) split(failures int, ranges [][2]int) (strict, lossy, markable []porcupine.Operation) {
	for _, op := range h.ops {
		key := op.Input.(kvInput).key
		slot := keyslot.Of([]byte(key))
		switch {
		case groupOf(key).tolerance < failures:
			lossy = append(lossy, op)
		case slices.ContainsFunc(ranges, func(r [2]int) bool { return slot >= r[0] && slot <= r[1] }):
			markable = append(markable, op)
		default:
			strict = append(strict, op)
		}
	}
	return strict, lossy, markable
}

// lostRanges are the slot ranges the cluster reports lost (keys of slots
// that nothing surviving names), from the watcher's /status.
func (r *robRun) lostRanges() [][2]int {
	st, err := r.c.status(r.watcher())
	must(r.t, err)
	var out [][2]int
	for _, k := range st.Lost {
		var first, last int
		if n, _ := fmt.Sscanf(k.Key, "(keys of slots %d-%d)", &first, &last); n == 2 {
			out = append(out, [2]int{first, last})
		}
	}
	if len(out) > 0 {
		r.event("slot ranges reported lost: %v", out)
	}
	return out
}

// longestGap is the longest time between two successful operations on one
// hot key within [from, to]: how long the fault kept a key from being
// served.
func (h *robHistory) longestGap(from, to time.Duration) time.Duration {
	byKey := map[string][]int64{}
	for _, op := range h.ops {
		k := op.Input.(kvInput).key
		if op.Return != math.MaxInt64 && slices.Contains(robHot, k) {
			byKey[k] = append(byKey[k], op.Return)
		}
	}
	var longest int64
	for _, rets := range byKey {
		slices.Sort(rets)
		prev := from.Nanoseconds()
		for _, ret := range rets {
			if ret > to.Nanoseconds() {
				ret = to.Nanoseconds()
			}
			if ret > prev {
				longest = max(longest, ret-prev)
				prev = ret
			}
		}
	}
	return time.Duration(longest)
}

// lostAcknowledged counts the keys whose last write was an acknowledged
// SET that no other write overlapped, and whose final read (the last
// operation of the history) did not return its value: an acknowledged
// write lost, stated without porcupine.
func lostAcknowledged(history []porcupine.Operation) int {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(kvInput).key
		byKey[k] = append(byKey[k], op)
	}
	lost := 0
	for _, ops := range byKey {
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		final, writes := ops[len(ops)-1], ops[:len(ops)-1]
		writes = slices.DeleteFunc(slices.Clone(writes), func(op porcupine.Operation) bool { return op.Input.(kvInput).op == "get" })
		if len(writes) == 0 {
			continue
		}
		last := writes[len(writes)-1]
		ambiguous := slices.ContainsFunc(writes[:len(writes)-1], func(w porcupine.Operation) bool { return w.Return > last.Call })
		if ambiguous || last.Input.(kvInput).op != "set" || last.Output.(kvOutput).unknown {
			continue
		}
		if out := final.Output.(kvOutput); !out.exists || out.value != last.Input.(kvInput).value {
			lost++
		}
	}
	return lost
}
