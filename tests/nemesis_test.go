package tests

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/memgest/memgest/internal/faults"
)

// A nemesis is one kind of fault the robustness suite injects into a
// running cluster while clients work (robustness_test.go). inject runs in
// the middle of the workload, from the scenario's seeded random source, and
// returns once the fault has healed (or, for a kill, once the cluster has
// had time to notice it).
type nemesis struct {
	name string
	// failures is how many nodes the fault may fail. Keys whose scheme
	// tolerates fewer are checked with lossyModel (loss allowed, wrong
	// values never); the others must lose nothing.
	failures int
	inject   func(r *robRun)
}

// faultHold is how long a pause, partition or slow link lasts: past the
// failure timeout (robTimeout), so that the node is marked failed and
// replaced, its shards recovered and rebuilt, while clients keep going.
const faultHold = 2 * time.Second

// nemeses is every fault the suite knows, in report order. Scenario seed s
// runs nemeses[s % len(nemeses)], so any run of consecutive seeds spreads
// over all of them.
var nemeses = []nemesis{
	{"kill random node", 1, func(r *robRun) { r.kill(r.pick(r.dataNodes())) }},
	{"kill hot-key coordinator", 1, func(r *robRun) { r.kill(r.hotCoordinator()) }},
	{"kill raft voter", 1, func(r *robRun) { r.kill(r.pick(r.c.voterIndexes(r.watcher()))) }},
	{"pause (SIGSTOP) past timeout", 1, func(r *robRun) { r.pause(r.pick(r.dataNodes())) }},
	{"partition one node", 1, func(r *robRun) { r.isolate(r.pick(r.dataNodes())) }},
	{"partition the raft leader", 1, func(r *robRun) { r.isolate(r.c.leader(r.watcher())) }},
	{"slow links (delay 20ms)", 1, func(r *robRun) { r.slow(r.pick(r.dataNodes()), 20*time.Millisecond) }},
	{"failpoint crash in a write", 1, (*robRun).crashInWrite},
	{"failpoint crash mid-recovery", 2, func(r *robRun) { r.crashInFailover(faults.MidRecovery) }},
	{"failpoint crash mid-rebuild", 2, func(r *robRun) { r.crashInFailover(faults.MidRebuild) }},
	{"slow links + kill", 1, func(r *robRun) {
		v := r.pick(r.dataNodes())
		r.touched = append(r.touched, v)
		r.setLinks(v, fmt.Sprintf("delay:%s", 10*time.Millisecond))
		r.kill(r.pick(r.others(v)))
		r.setLinks(v, "ok")
	}},
	{"second failover (kill, rebuild, kill)", 2, func(r *robRun) {
		first := r.pick(r.dataNodes())
		r.kill(first)
		r.c.waitFailed(r.watcher(), first, 15*time.Second)
		r.c.waitRebuilt(r.watcher(), 30*time.Second)
		r.waitVoters()
		r.event("node %d failed over and rebuilt", first)
		r.kill(r.pick(r.dataNodes()))
	}},
	{"two kills 1 s apart", 2, func(r *robRun) {
		r.killNoWait(r.pick(r.dataNodes()))
		time.Sleep(time.Second)
		r.kill(r.pick(r.dataNodes())) // five voters survive two failures, voters or not
	}},
	{"kill the raft leader and a node, restart both at once", 2, func(r *robRun) {
		leader := r.c.leader(r.watcher())
		r.killRestart(leader, r.pick(r.others(leader)))
	}},
	{"bit flips in one node's copies", 1, func(r *robRun) { r.flips(r.pick(r.dataNodes())) }},
}

// writePoints are the failpoints of a coordinator's write.
var writePoints = []string{faults.BeforeRedundancy, faults.BeforeCommit, faults.AfterCommit, faults.BeforeRelease}

// pick returns one of xs, from the scenario's random source.
func (r *robRun) pick(xs []int) int {
	if len(xs) == 0 {
		r.t.Fatal("nemesis: no node to pick")
	}
	return xs[r.rng.Intn(len(xs))]
}

// dataNodes are the nodes that coordinate keys and are not down: not the
// spare (until it replaces a node it holds nothing) and not a victim.
func (r *robRun) dataNodes() []int {
	var out []int
	for i := 0; i < robNodes; i++ {
		if !slices.Contains(r.victims, i) {
			out = append(out, i)
		}
	}
	return out
}

// others are the nodes of the cluster other than i and the victims.
func (r *robRun) others(i int) []int {
	return slices.DeleteFunc(r.dataNodes(), func(j int) bool { return j == i })
}

// watcher is a live node no fault touched, which the runner asks about the
// cluster and reads through.
func (r *robRun) watcher() int {
	for _, i := range r.dataNodes() {
		if !slices.Contains(r.touched, i) {
			return i
		}
	}
	r.t.Fatal("nemesis: every node was touched")
	return -1
}

// hotCoordinator is the node that coordinates the hottest key.
func (r *robRun) hotCoordinator() int {
	cl, err := r.c.clusterClient().MasterForKey(ctxT(r.t), robKeys[0])
	must(r.t, err)
	i := slices.IndexFunc(r.c.nodes, func(nd *node) bool { return nd.addr() == cl.Options().Addr })
	if i < 0 {
		r.t.Fatalf("nemesis: no node at %s", cl.Options().Addr)
	}
	return i
}

// kill is kill -9 of node i, then a wait while the cluster marks it failed
// and recovers its shards under load.
func (r *robRun) kill(i int) {
	r.killNoWait(i)
	time.Sleep(faultHold)
}

func (r *robRun) killNoWait(i int) {
	r.event("kill -9 node %d", i)
	r.victims = append(r.victims, i)
	must(r.t, r.c.nodes[i].cmd.Process.Kill())
}

// killRestart is kill -9 of nodes, each started again at once on its data
// directory (same id, empty memory), then a wait while the cluster fails
// them over and readmits them. With the leader among them, a node may
// come back under a leader that never heard of its old incarnation.
func (r *robRun) killRestart(nodes ...int) {
	for _, i := range nodes {
		r.event("kill -9 node %d", i)
		r.touched = append(r.touched, i)
		must(r.t, r.c.nodes[i].cmd.Process.Kill())
	}
	for _, i := range nodes {
		r.c.restart(i)
		r.event("node %d started again", i)
	}
	time.Sleep(faultHold)
}

// waitVoters waits until as many live nodes vote as the map calls for
// (cluster.VoterTarget: five once rep:3 or split:3+2 exists), a failed
// voter's vote having passed on.
func (r *robRun) waitVoters() {
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := r.c.status(r.watcher())
		if err == nil && st.VotersUp >= st.VoterTarget {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("nemesis: %d of the %d voters the map calls for answer after 15 s (%v)", st.VotersUp, st.VoterTarget, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pause stops node i (SIGSTOP) past the failure timeout, then resumes it:
// marked failed meanwhile, it must wipe itself and rejoin.
func (r *robRun) pause(i int) {
	r.event("SIGSTOP node %d", i)
	r.touched = append(r.touched, i)
	must(r.t, r.c.nodes[i].cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(faultHold)
	must(r.t, r.c.nodes[i].cmd.Process.Signal(syscall.SIGCONT))
	r.event("SIGCONT node %d", i)
}

// isolate cuts every peer link of node i, both ways, past the failure
// timeout, then heals them. Clients still reach it: what it answers while
// cut off is in the history.
func (r *robRun) isolate(i int) {
	r.event("partition node %d from the others", i)
	r.touched = append(r.touched, i)
	r.setLinks(i, "drop")
	time.Sleep(faultHold)
	r.setLinks(i, "ok")
	r.event("partition healed")
}

// flipInterval is how often the bit-flip nemesis corrupts keys' copies,
// flipsPerTick keys at a time.
const (
	flipInterval = 40 * time.Millisecond
	flipsPerTick = 4
)

// flips corrupts, for faultHold, node i's copies of random keys that
// survive a failure, flipsPerTick keys every flipInterval (DEBUG FLIP: its record,
// its pieces, its objects in packed chunks, holders' copies and batch
// pieces), as a node with failing memory would. Reads, writes and the
// scrub must find every flipped copy before they serve or encode it and
// repair it from the other nodes: all the damage is on one node, within
// every strict key's tolerance.
func (r *robRun) flips(i int) {
	r.event("bit flips in node %d's copies", i)
	r.touched = append(r.touched, i)
	var keys []string
	for _, k := range robKeys {
		if groupOf(k).tolerance >= 1 {
			keys = append(keys, k)
		}
	}
	flipped := int64(0)
	for end := time.Now().Add(faultHold); time.Now().Before(end); time.Sleep(flipInterval) {
		for range flipsPerTick {
			n, err := r.admin(i).Do(ctxT(r.t), "DEBUG", "FLIP", keys[r.rng.Intn(len(keys))]).Int64()
			if err != nil {
				r.t.Fatalf("DEBUG FLIP on node %d: %v", i, err)
			}
			flipped += n
		}
	}
	r.event("%d copies flipped on node %d", flipped, i)
}

// slow delays every peer link of node i, both ways, for faultHold.
func (r *robRun) slow(i int, d time.Duration) {
	r.event("delay %s on node %d's links", d, i)
	r.touched = append(r.touched, i)
	r.setLinks(i, "delay:"+d.String())
	time.Sleep(faultHold)
	r.setLinks(i, "ok")
	r.event("links healed")
}

// setLinks sets fault on node i's links to every other node and on theirs
// to it (DEBUG LINK), skipping nodes that are down.
func (r *robRun) setLinks(i int, fault string) {
	for j := range r.c.nodes {
		if j == i || slices.Contains(r.victims, j) {
			continue
		}
		r.debug(i, "LINK", r.c.nodes[j].peerAddr(), fault)
		r.debug(j, "LINK", r.c.nodes[i].peerAddr(), fault)
	}
}

// debug runs DEBUG args... on node i.
func (r *robRun) debug(i int, args ...string) {
	cmd := []any{"DEBUG"}
	for _, a := range args {
		cmd = append(cmd, a)
	}
	if err := r.admin(i).Do(ctxT(r.t), cmd...).Err(); err != nil {
		r.t.Fatalf("DEBUG %s on node %d: %v", strings.Join(args, " "), i, err)
	}
}

// crashInWrite arms "crash" at one of the write failpoints on the hot key's
// coordinator: its next write to reach the point kills it there. If no
// write reaches the point in time, the node is killed anyway and the event
// says so.
func (r *robRun) crashInWrite() {
	point := writePoints[r.rng.Intn(len(writePoints))]
	i := r.hotCoordinator()
	r.event("arm %s=crash on node %d", point, i)
	r.armCrash(i, point)
	r.victims = append(r.victims, i)
	r.awaitCrash(i, point)
	time.Sleep(faultHold)
}

// crashInFailover kills a node and arms point (mid-recovery or
// mid-rebuild) on another, which crashes when it reaches it: a second
// failure in the middle of the first one's repair. Mid-recovery is armed on
// a random survivor (it crashes if it is the next node of one of the
// victim's shards); mid-rebuild on the spare, which rebuilds the victim's
// pieces.
func (r *robRun) crashInFailover(point string) {
	first := r.pick(r.dataNodes())
	second := robNodes // the spare
	if point == faults.MidRecovery {
		second = r.pick(r.others(first))
	}
	r.event("arm %s=crash on node %d", point, second)
	r.armCrash(second, point)
	r.kill(first)
	r.victims = append(r.victims, second)
	r.awaitCrash(second, point)
	time.Sleep(faultHold)
}

// armCrash arms point=crash on node i (DEBUG FAILPOINT). Under load the
// node can reach the point and exit before its answer is written, so a
// lost connection counts as armed when the node has exited.
func (r *robRun) armCrash(i int, point string) {
	err := r.admin(i).Do(ctxT(r.t), "DEBUG", "FAILPOINT", point, "crash").Err()
	if err == nil {
		return
	}
	select {
	case <-r.c.nodes[i].done:
	case <-time.After(3 * time.Second):
		r.t.Fatalf("DEBUG FAILPOINT %s crash on node %d: %v", point, i, err)
	}
}

// awaitCrash waits for node i to crash at its armed failpoint, or kills it.
func (r *robRun) awaitCrash(i int, point string) {
	select {
	case <-r.c.nodes[i].done:
		r.event("node %d crashed at %s", i, point)
		r.reached++
	case <-time.After(3 * time.Second):
		r.event("%s not reached on node %d in 3 s: kill -9", point, i)
		must(r.t, r.c.nodes[i].cmd.Process.Kill())
	}
}

// randomSource is the scenario's seeded source; every choice of a run
// comes from it, so that SEED= replays the same faults on the same nodes
// (the workload's timing, and so its exact history, still varies).
func randomSource(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }
