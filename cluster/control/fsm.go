package control

import (
	"fmt"
	"io"

	"github.com/memgest/memgest/cluster"

	"github.com/hashicorp/raft"
)

// fsm is the Raft state machine: the map, changed only by Apply.
type fsm struct {
	hub *hub
}

// Apply applies one committed log entry. A refused or undecodable command
// is a no-op on the map; its error is the response, which reaches the
// proposer through the ApplyFuture (on the leader, which is where proposals
// are made, the value is passed in memory, so errors.Is works). On success
// the response is the resulting *Map.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	cmd, err := cluster.DecodeCommand(l.Data)
	if err != nil {
		return err
	}
	cur := f.hub.load()
	next, err := cluster.Apply(cur, cmd)
	if err != nil {
		return err
	}
	if next != cur {
		f.hub.publish(next)
	}
	return next
}

// Snapshot captures the current map; maps are immutable, so encoding can
// wait for Persist, which runs concurrently with Apply.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return snapshot{f.hub.load()}, nil
}

// Restore replaces the map with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("cluster: read snapshot: %w", err)
	}
	m, err := cluster.UnmarshalMap(data)
	if err != nil {
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	f.hub.publish(m)
	return nil
}

type snapshot struct{ m *cluster.Map }

// Persist writes the map as Marshal encodes it.
func (s snapshot) Persist(sink raft.SnapshotSink) error {
	data, err := s.m.Marshal()
	if err == nil {
		_, err = sink.Write(data)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release does nothing: the snapshot holds only an immutable map.
func (snapshot) Release() {}
