// Package faults injects failures into a memgest node for the robustness
// suite (tests/robustness_test.go): failpoints at the dangerous points of
// the data path, and faults on the node's outgoing peer links (partitions,
// latency). Everything here is inert unless the binary is built with
//
//	go build -tags failpoints
//
// Without the tag, Hit and Active compile to nothing and Arm and SetLink
// refuse with ErrNotBuilt, so a production build carries no fault code
// path. The tests build the binary with the tag; the points do nothing
// until a test arms them with DEBUG FAILPOINT (see docs/robustness.md).
//
// Hand-written: gofail (etcd) rewrites comments into code at build time and
// toxiproxy runs a proxy per link with its own control API. memgest needs a
// handful of points and per-peer link faults inside one process, which a
// build tag and a table keep simpler than either.
//
// Failpoint actions (Arm):
//   - "crash": the process kills itself with SIGKILL at the point, as
//     kill -9 would, before anything after the point runs;
//   - "sleep:<duration>": the goroutine that reaches the point sleeps
//     (a slow disk, a stalled thread), every time;
//   - "on": Active(name) answers true (injected bugs, see BugEarlyAck);
//   - "off": disarms.
//
// Link faults (SetLink) apply to connections this node dials to a peer
// address: "drop" fails them (and every connection already open to it) so
// nothing flows either way on them; "delay:<duration>" holds every write;
// "ok" clears the fault. A partition between two nodes is SetLink on both.
package faults

import "errors"

// ErrNotBuilt is returned when fault injection is asked of a binary built
// without the failpoints tag.
var ErrNotBuilt = errors.New("faults: failpoints not compiled in (build with -tags failpoints)")

// Names of the failpoints in the server. They are listed here so that a
// test arms exactly the points the server hits.
const (
	// BeforeRedundancy is hit by a coordinator's write before it sends any
	// redundancy piece.
	BeforeRedundancy = "write.before-redundancy"
	// BeforeCommit is hit once every redundancy piece is acknowledged and
	// before the coordinator commits (nothing is acknowledged yet).
	BeforeCommit = "write.before-commit"
	// AfterCommit is hit after the commit and before the client's reply.
	AfterCommit = "write.after-commit"
	// BeforeRelease is hit after a commit that replaced a record (an
	// overwrite of a split key, a move to another scheme, a deletion) and
	// before the replaced pieces are released: the middle of a move.
	BeforeRelease = "write.before-release"
	// MidRebuild is hit by a rebuild between two batches of a shard.
	MidRebuild = "rebuild.mid-shard"
	// MidRecovery is hit by a shard's new coordinator after it listed the
	// survivors' pieces and before it writes the recovered records.
	MidRecovery = "recovery.mid-shard"
	// StripeBetweenHolders is hit by a coordinator sending chunk updates
	// (a stripe write, seal, removal) to several parity holders, once the
	// first holder has applied them and before the others receive them:
	// armed "crash", the holders are left at different seqs of the chunk.
	StripeBetweenHolders = "stripe.between-holders"
	// BeforeStripeRestore is hit by the background pass that restores a
	// recovered shard's pending stripe chunks, before it starts: armed
	// "sleep", it leaves the chunks to commands on their keys meanwhile.
	BeforeStripeRestore = "stripe.before-restore"

	// BugEarlyAck is a deliberately wrong path, for proving that the suite
	// can fail: when "on", a coordinator acknowledges a write without
	// waiting for its redundancy, which it sends late, as if over a slow
	// link. A coordinator killed then loses acknowledged writes.
	BugEarlyAck = "bug.early-ack"
)

// Points lists the failpoints a test may arm with "crash" or "sleep".
var Points = []string{BeforeRedundancy, BeforeCommit, AfterCommit, BeforeRelease, MidRebuild, MidRecovery, StripeBetweenHolders, BeforeStripeRestore}
