// Package simcluster runs a memgest cluster inside one test process,
// deterministically where it can be: N server.Nodes on one
// transport.InmemNetwork, their Raft state in memory, a fake failure clock,
// and every random choice drawn from one seed.
//
// A Cluster starts its nodes one after another (so the join order, and
// with it the placement, is the same on every run), with node ids drawn
// from the seed. Tests drive it sequentially: Do runs a command on a node
// (server.Node.Do; there is no client port), Connect opens a connection of
// the test's own over an in-memory pipe (a subscriber's, say), Kill closes
// a node abruptly, FailOver moves the fake clock on until the control
// plane has marked the killed or cut-off nodes failed, Partition and Heal
// cut and restore peer links (frames and Raft alike), AddSpare joins a
// spare, WaitMap waits for a condition on every live node's map. Each of these appends a line to
// the trace (Trace): the command and its reply, or the step and the map's
// epoch and node states once the step has settled.
//
// # What is deterministic
//
// Under the fake clock (Clock, server.InMemory.Clock): whether a node's
// lease holds, and when the leader's failure detector finds a node silent.
// The clock stands still unless FailOver moves it, so no node is ever
// marked failed because the machine was slow (a race-built test on two
// busy cores), and a killed node is marked failed exactly when the test
// says. FailOver moves it in steps of a quarter of the failure timeout and,
// after each, waits until every live node has renewed its lease at the new
// time, so only the silent nodes fall behind.
//
// From the seed (Rand, -sim.seed): node ids and so the placement, and
// whatever a test draws — keys, values, schemes, which node to kill, the
// order of operations.
//
// Not deterministic, and kept out of the trace: Raft's timers (elections,
// heartbeats, which node leads after the leader dies: hashicorp/raft reads
// the system clock), the heartbeat, detector, job and retry loops' ticks
// (real timers, so a step's effects arrive in real time; the harness waits
// for them by condition, never by sleeping), goroutine scheduling inside a
// node (concurrent rebuild and recovery workers, group commit), write
// versions (server's versionClock counts from the wall clock: the trace
// masks every integer of 16 digits or more), key expiry (wall clock), and
// the pacing of rebuild, scrub and sweep. A scenario replays identically
// when its outcome depends only on the deterministic part: the same
// commands get the same replies, and each settled step the same epoch and
// node states.
//
// # Replaying a seed
//
// Seed(t) returns the seed of -sim.seed when given, else a fresh one; a
// Cluster logs it at start and, if the test fails, prints the flag that
// replays it:
//
//	go test ./internal/simcluster -run TestX -sim.seed=42
package simcluster
