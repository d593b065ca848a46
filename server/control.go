package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/transport"
)

// This file is the node's side of the control plane: proposing map changes
// through whichever node leads Raft, joining a cluster, and resolving scheme
// names. Nothing in the data path waits on Raft except a scheme's first use.

// onPropose applies a map command on the leader and answers the new epoch.
func (n *Node) onPropose(b []byte) ([]byte, error) {
	if !n.Ctl.IsLeader() {
		return nil, n.NotLeader()
	}
	cmd, err := cluster.DecodeCommand(b)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := n.Ctl.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return []byte(strconv.FormatUint(m.Epoch, 10)), nil
}

// onJoin adds a node on the leader (as a Raft voter or non-voter, and to the
// map) and answers the new epoch.
func (n *Node) onJoin(b []byte) ([]byte, error) {
	if !n.Ctl.IsLeader() {
		return nil, n.NotLeader()
	}
	cmd, err := cluster.DecodeCommand(b)
	add, ok := cmd.(cluster.AddNode)
	if err != nil || !ok {
		return nil, fmt.Errorf("server: bad join request: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := n.Ctl.AddMember(ctx, add)
	if err != nil {
		return nil, err
	}
	return []byte(strconv.FormatUint(m.Epoch, 10)), nil
}

// join asks the cluster at cfg.Join to admit this node, retrying until a
// leader accepts or ctx ends.
func (n *Node) join(ctx context.Context, self cluster.Node) error {
	b, err := cluster.EncodeCommand(cluster.AddNode{Node: self, Spare: n.Cfg.Spare})
	if err != nil {
		return err
	}
	addr := n.Cfg.Join
	var warned string // the refusal last logged, and when
	var warnedAt int64
	for {
		out, err := n.CallAddr(ctx, addr, peer.MsgJoin, b)
		if err == nil {
			epoch, _ := strconv.ParseUint(string(out), 10, 64)
			_, err = n.Ctl.WaitEpoch(ctx, epoch)
			return err
		}
		if hint, ok := core.LeaderHint(err); ok {
			addr = hint
		}
		// A refusal (the leader answered, and not NOTLEADER) may last
		// forever, and only an operator can end it: warn, once per
		// minute while it stays the same. Unreachable peers and leader
		// changes are what joining looks like while the cluster starts.
		var re *transport.RemoteError
		if refused := errors.As(err, &re) && !strings.Contains(re.Msg, core.NotLeaderPrefix); refused &&
			(re.Msg != warned || n.MonoNow()-warnedAt >= int64(time.Minute)) {
			n.Log.Warn("join refused; retrying", "addr", addr, "err", err)
			warned, warnedAt = re.Msg, n.MonoNow()
		} else {
			n.Log.Debug("join retry", "addr", addr, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server: joining via %s: %w", n.Cfg.Join, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
