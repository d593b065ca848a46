package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/server/peer"
)

// NotLeaderPrefix starts the error a non-leader returns for a control
// request; the leader's peer address follows when known.
const NotLeaderPrefix = "NOTLEADER "

// OnMaps calls fn with this node's map at once, at every new map, and,
// when every is above zero, that often in between (to retry what failed),
// until ctx ends: the loop of the node's map-driven work.
func (n *Coordinator) OnMaps(ctx context.Context, every time.Duration, fn func(*cluster.Map)) {
	maps, cancel := n.Ctl.Subscribe()
	defer cancel()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		fn(n.Ctl.Map())
		select {
		case <-ctx.Done():
			return
		case _, ok := <-maps:
			if !ok {
				return
			}
		case <-tick:
		}
	}
}

// Propose applies a map change through the Raft leader and returns the new
// map once this node has applied it too.
func (n *Coordinator) Propose(ctx context.Context, cmd cluster.Command) (*cluster.Map, error) {
	b, err := cluster.EncodeCommand(cmd)
	if err != nil {
		return nil, err
	}
	out, err := n.toLeader(ctx, peer.MsgPropose, b)
	if err != nil {
		return nil, err
	}
	epoch, err := strconv.ParseUint(string(out), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("server: bad propose reply %q", out)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := n.Ctl.WaitEpoch(ctx, epoch)
	if err != nil {
		return nil, fmt.Errorf("server: the change was committed at epoch %d but this node has not applied it yet: %w", epoch, err)
	}
	return m, nil
}

// toLeader runs a control request on the leader: locally when this node
// leads, else on the leader named by Raft, following NOTLEADER hints while a
// new leader is elected.
func (n *Coordinator) toLeader(ctx context.Context, typ uint8, payload []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var out []byte
		var err error
		if n.Ctl.IsLeader() {
			out, err = n.Router.Handler(typ)(payload)
		} else if _, addr, ok := n.Ctl.Leader(); ok {
			out, err = n.CallAddr(ctx, addr, typ, payload)
		} else {
			err = errors.New(NotLeaderPrefix)
		}
		if err == nil || !strings.Contains(err.Error(), NotLeaderPrefix) {
			return out, unwrapRemote(err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("server: no Raft leader reachable: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CallAddr is call for a peer known only by address (the leader, a join
// target).
func (n *Coordinator) CallAddr(ctx context.Context, addr string, typ uint8, payload []byte) ([]byte, error) {
	return n.Call(ctx, cluster.Node{PeerAddr: addr}, typ, payload)
}

// LeaderHint is the leader's address a NOTLEADER error names, if any.
func LeaderHint(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	i := strings.Index(msg, NotLeaderPrefix)
	if i < 0 {
		return "", false
	}
	hint := msg[i+len(NotLeaderPrefix):]
	return hint, hint != ""
}

func (n *Coordinator) NotLeader() error {
	_, addr, _ := n.Ctl.Leader()
	return errors.New(NotLeaderPrefix + addr)
}

// ResolveScheme finds a scheme by alias or spec. A valid spec that is not
// in the catalogue yet is registered through Raft on first use.
func (n *Coordinator) ResolveScheme(ctx context.Context, name string) (cluster.SchemeEntry, error) {
	if e, ok := n.Ctl.Map().Scheme(name); ok {
		return e, nil
	}
	spec, err := scheme.Parse(name)
	if err != nil {
		if scheme.CheckAlias(name) == nil {
			return cluster.SchemeEntry{}, fmt.Errorf("memgest: no scheme named %q (SCHEME.LIST shows them)", name)
		}
		return cluster.SchemeEntry{}, err
	}
	m, err := n.Propose(ctx, cluster.CreateScheme{Spec: spec})
	if err != nil {
		return cluster.SchemeEntry{}, err
	}
	if e, ok := m.Scheme(name); ok {
		return e, nil
	}
	return cluster.SchemeEntry{}, fmt.Errorf("memgest: scheme %s was not registered", spec)
}

// unwrapRemote strips the transport's "remote error" wrapping so a domain
// error from the leader reads as if raised here.
func unwrapRemote(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(msg, "remote error: "); i >= 0 {
		return errors.New(msg[i+len("remote error: "):])
	}
	return err
}
