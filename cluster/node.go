package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// NodeID names a node for its whole life: 40 lowercase hex characters, the
// form Redis Cluster uses in CLUSTER NODES and CLUSTER SHARDS. It is also the
// node's Raft server id.
type NodeID string

// nodeIDLen is the length of a NodeID in characters.
const nodeIDLen = 40

// NewNodeID returns a random NodeID (160 bits from crypto/rand).
func NewNodeID() NodeID {
	var b [nodeIDLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return NodeID(hex.EncodeToString(b[:]))
}

// Valid reports whether id has the NodeID form.
func (id NodeID) Valid() bool {
	if len(id) != nodeIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NodeState is where a node is in its life cycle.
type NodeState uint8

// Node states. The zero value is invalid, so a forgotten state is caught.
const (
	// Joining is reserved for a member being admitted; no command sets it yet.
	Joining NodeState = iota + 1
	// Up nodes serve their place in every shard placement they appear in.
	Up
	// Spare nodes joined after the cluster formed: known, up, holding
	// nothing, ready to replace a failed node (Ring §5.5; used by issue 4).
	Spare
	// Failed nodes were marked by the leader's failure detector
	// (MarkFailed): they coordinate nothing and hold no live pieces.
	Failed
	// Left is reserved for nodes removed by an operator.
	Left
)

var nodeStateNames = [...]string{Joining: "joining", Up: "up", Spare: "spare", Failed: "failed", Left: "left"}

// String is the lowercase state name, as shown to users and in encoded maps.
func (s NodeState) String() string {
	if s.valid() {
		return nodeStateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

func (s NodeState) valid() bool { return s >= Joining && s <= Left }

// MarshalText encodes the state by name, so encoded maps read well.
func (s NodeState) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, errorf(ErrBadMap, "invalid node state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a state name.
func (s *NodeState) UnmarshalText(b []byte) error {
	for i, name := range nodeStateNames {
		if name != "" && name == string(b) {
			*s = NodeState(i)
			return nil
		}
	}
	return errorf(ErrBadMap, "unknown node state %q", b)
}

// Node is one memgest server as the map knows it.
type Node struct {
	ID         NodeID    `json:"id"`
	ClientAddr string    `json:"client_addr"`         // RESP clients connect here
	PeerAddr   string    `json:"peer_addr"`           // node-to-node and Raft traffic
	HTTPAddr   string    `json:"http_addr,omitempty"` // metrics; optional
	State      NodeState `json:"state"`
	Voter      bool      `json:"voter"` // a Raft voter (else a non-voter)
	// Draining marks an up node being emptied (Drain): it serves what it
	// holds, and a rebalance moves all of it elsewhere.
	Draining bool `json:"draining,omitempty"`
	// Zone and Host name the node's failure domains (decision 0021):
	// nodes sharing one may fail together, so placement spreads every
	// shard's positions over distinct zones, then hosts. Optional.
	Zone string `json:"zone,omitempty"`
	Host string `json:"host,omitempty"`
}

// Gone says whether the node failed or left the cluster: it holds nothing
// and may answer nothing, so nobody waits for it.
func (n Node) Gone() bool { return n.State == Failed || n.State == Left }

// sameEndpoint reports whether n and o differ in nothing AddNode may update.
func (n Node) sameEndpoint(o Node) bool {
	return n.ClientAddr == o.ClientAddr && n.PeerAddr == o.PeerAddr &&
		n.HTTPAddr == o.HTTPAddr && n.Voter == o.Voter && n.Zone == o.Zone && n.Host == o.Host
}
