package cluster

import (
	"encoding/json"

	"github.com/memgest/memgest/scheme"
)

// Command is a change to the map. The concrete commands are Init, AddNode,
// CreateScheme, DropScheme, SetDefault, SetPolicy, MarkFailed, ShardRecovered,
// StripesRestored, RebuildDone, SetVoters, Rejoin, SetPassword, and the
// rebalancing commands SetRebalance, Migrate, MigrationDone, Promote, Drain,
// RemoveNode and Replace (migrate.go), and the loss reports ReportLoss,
// ClearLost and ForgetLosses (losses.go); Apply applies one, and
// EncodeCommand/DecodeCommand carry one through the Raft log or to the
// leader over the peer protocol.
type Command interface {
	op() string
	// apply returns m itself when nothing changes, or a modified Clone of
	// m whose epoch and index Apply then sets.
	apply(m *Map) (*Map, error)
}

// Init sets the cluster-wide constants. It is the first entry of every
// cluster's log, proposed by the bootstrap node, so that every member derives
// the same map from the log alone whatever its own configuration says.
type Init struct {
	Expect int `json:"expect"` // nodes expected before the placement is fixed
	Voters int `json:"voters"` // the fewest Raft voters: 1, 3, 5 or 7 (VoterTarget)
	// Password is the clients' password (requirepass), or nil for none.
	Password *Password `json:"password,omitempty"`
}

// AddNode admits a node, or updates the addresses of a known one. Only ID,
// the addresses and Voter are read; Apply decides the state: up while the
// cluster forms, spare after, or spare at once with Spare set (a node
// started with --spare does not count toward the expected nodes).
type AddNode struct {
	Node  Node
	Spare bool
}

// CreateScheme registers a scheme: an alias for Spec, or with Alias "" the
// bare spec itself.
type CreateScheme struct {
	Alias string
	Spec  scheme.Spec
}

// DropScheme removes the scheme called Name (an alias, or a spec with a bare
// entry). The server must first check, cluster-wide, that no key uses it:
// key counts live outside the map (see docs/cluster.md).
type DropScheme struct {
	Name string `json:"name"`
}

// SetDefault makes the scheme called Name the default for writes that name
// none. A spec that is not registered yet is registered as a bare entry.
type SetDefault struct {
	Name string `json:"name"`
}

// SetPolicy sets the cluster's scheme policy, replacing any, or removes it
// (Kind PolicyOff). Schemes are named as in SetDefault: an alias or a spec,
// a spec not registered yet being registered as a bare entry in the same
// change, so a refused policy changes nothing.
type SetPolicy struct {
	Kind        string `json:"kind"`
	Threshold   int64  `json:"threshold,omitempty"`
	Below       string `json:"below,omitempty"`
	Above       string `json:"above,omitempty"`
	Hot         string `json:"hot,omitempty"`
	Cold        string `json:"cold,omitempty"`
	IdleSeconds int64  `json:"idle_seconds,omitempty"`
}

func (Init) op() string            { return "init" }
func (AddNode) op() string         { return "add_node" }
func (CreateScheme) op() string    { return "create_scheme" }
func (DropScheme) op() string      { return "drop_scheme" }
func (SetDefault) op() string      { return "set_default" }
func (SetPolicy) op() string       { return "set_policy" }
func (MarkFailed) op() string      { return "mark_failed" }
func (ShardRecovered) op() string  { return "shard_recovered" }
func (StripesRestored) op() string { return "stripes_restored" }
func (RebuildDone) op() string     { return "rebuild_done" }
func (SetVoters) op() string       { return "set_voters" }
func (Rejoin) op() string          { return "rejoin" }
func (SetPassword) op() string     { return "set_password" }

type envelope struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// EncodeCommand encodes c for the Raft log (JSON: {"op": ..., "args": ...}).
func EncodeCommand(c Command) ([]byte, error) {
	if c == nil {
		return nil, errorf(ErrBadCommand, "no command")
	}
	args, err := json.Marshal(c)
	if err != nil {
		return nil, wrapf(ErrBadCommand, err, "cannot encode %s: %v", c.op(), err)
	}
	return json.Marshal(envelope{Op: c.op(), Args: args})
}

// DecodeCommand decodes what EncodeCommand wrote. Errors match ErrBadCommand.
func DecodeCommand(b []byte) (Command, error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, wrapf(ErrBadCommand, err, "cannot decode command: %v", err)
	}
	switch env.Op {
	case "init":
		return decodeArgs[Init](env)
	case "add_node":
		return decodeArgs[AddNode](env)
	case "create_scheme":
		return decodeArgs[CreateScheme](env)
	case "drop_scheme":
		return decodeArgs[DropScheme](env)
	case "set_default":
		return decodeArgs[SetDefault](env)
	case "set_policy":
		return decodeArgs[SetPolicy](env)
	case "mark_failed":
		return decodeArgs[MarkFailed](env)
	case "shard_recovered":
		return decodeArgs[ShardRecovered](env)
	case "stripes_restored":
		return decodeArgs[StripesRestored](env)
	case "rebuild_done":
		return decodeArgs[RebuildDone](env)
	case "set_voters":
		return decodeArgs[SetVoters](env)
	case "rejoin":
		return decodeArgs[Rejoin](env)
	case "set_password":
		return decodeArgs[SetPassword](env)
	case "set_rebalance":
		return decodeArgs[SetRebalance](env)
	case "migrate":
		return decodeArgs[Migrate](env)
	case "migration_done":
		return decodeArgs[MigrationDone](env)
	case "promote":
		return decodeArgs[Promote](env)
	case "drain":
		return decodeArgs[Drain](env)
	case "remove_node":
		return decodeArgs[RemoveNode](env)
	case "replace":
		return decodeArgs[Replace](env)
	case "report_loss":
		return decodeArgs[ReportLoss](env)
	case "clear_lost":
		return decodeArgs[ClearLost](env)
	case "forget_losses":
		return decodeArgs[ForgetLosses](env)
	}
	return nil, errorf(ErrBadCommand, "unknown command %q", env.Op)
}

func decodeArgs[T Command](env envelope) (Command, error) {
	var c T
	if err := json.Unmarshal(env.Args, &c); err != nil {
		return nil, wrapf(ErrBadCommand, err, "cannot decode %s: %v", env.Op, err)
	}
	return c, nil
}

type addNodeJSON struct {
	ID         NodeID `json:"id"`
	ClientAddr string `json:"client_addr"`
	PeerAddr   string `json:"peer_addr"`
	HTTPAddr   string `json:"http_addr,omitempty"`
	Voter      bool   `json:"voter"`
	Spare      bool   `json:"spare,omitempty"`
	Zone       string `json:"zone,omitempty"`
	Host       string `json:"host,omitempty"`
}

// MarshalJSON encodes the fields AddNode reads (not the state).
func (c AddNode) MarshalJSON() ([]byte, error) {
	n := c.Node
	return json.Marshal(addNodeJSON{n.ID, n.ClientAddr, n.PeerAddr, n.HTTPAddr, n.Voter, c.Spare, n.Zone, n.Host})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *AddNode) UnmarshalJSON(b []byte) error {
	var j addNodeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	c.Node = Node{ID: j.ID, ClientAddr: j.ClientAddr, PeerAddr: j.PeerAddr, HTTPAddr: j.HTTPAddr, Voter: j.Voter,
		Zone: j.Zone, Host: j.Host}
	c.Spare = j.Spare
	return nil
}

type createSchemeJSON struct {
	Alias string `json:"alias,omitempty"`
	Spec  string `json:"spec"`
}

// MarshalJSON writes the spec in its canonical spelling.
func (c CreateScheme) MarshalJSON() ([]byte, error) {
	return json.Marshal(createSchemeJSON{Alias: c.Alias, Spec: c.Spec.String()})
}

// UnmarshalJSON reads what MarshalJSON writes; a bad spec is an error.
func (c *CreateScheme) UnmarshalJSON(b []byte) error {
	var j createSchemeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	sp, err := scheme.Parse(j.Spec)
	if err != nil {
		return err
	}
	*c = CreateScheme{Alias: j.Alias, Spec: sp}
	return nil
}
