package cluster

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

// Marshal encodes m deterministically (JSON, fields in declaration order,
// states and specs by name). It is the snapshot format of the control plane.
func (m *Map) Marshal() ([]byte, error) {
	return json.Marshal(m)
}

// UnmarshalMap decodes and validates a map encoded by Marshal. Every error
// matches ErrBadMap; a map it returns satisfies every invariant Apply keeps.
func UnmarshalMap(data []byte) (*Map, error) {
	m := &Map{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, wrapf(ErrBadMap, err, "cannot decode map: %v", err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.idx = buildIndex(m)
	return m, nil
}

type schemeEntryJSON struct {
	ID    uint16 `json:"id"`
	Spec  string `json:"spec"`
	Alias string `json:"alias,omitempty"`
}

// MarshalJSON writes the spec in its canonical spelling ("rep:3").
func (e SchemeEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(schemeEntryJSON{ID: e.ID, Spec: e.Spec.String(), Alias: e.Alias})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (e *SchemeEntry) UnmarshalJSON(b []byte) error {
	var j schemeEntryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	sp, err := scheme.Parse(j.Spec)
	if err != nil {
		return wrapf(ErrBadMap, err, "scheme %d: %v", j.ID, err)
	}
	*e = SchemeEntry{ID: j.ID, Spec: sp, Alias: j.Alias}
	return nil
}

// validate checks every invariant of a map. Apply keeps them by
// construction; UnmarshalMap checks them on input it does not trust.
func (m *Map) validate() error {
	for _, check := range []func() error{m.validateHeader, m.validateNodes, m.validateShards, m.validateSchemes, m.validatePolicy} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (m *Map) validateHeader() error {
	if !m.State.valid() {
		return errorf(ErrBadMap, "invalid cluster state %d", m.State)
	}
	if m.Expect == 0 && m.Voters == 0 && m.Epoch == 0 && len(m.Nodes) == 0 {
		return nil // the uninitialised map
	}
	if m.Expect < 1 || m.Expect > keyslot.Count {
		return errorf(ErrBadMap, "expect %d out of range 1..%d", m.Expect, keyslot.Count)
	}
	if !ValidVoters(m.Voters) {
		return errorf(ErrBadMap, "voters %d, want 1, 3, 5 or 7", m.Voters)
	}
	if !m.Password.valid() {
		return errorf(ErrBadMap, "malformed password digest")
	}
	if r := m.Rebalance; r != nil {
		if _, err := (SetRebalance{Rate: r.Rate, Parallel: r.Parallel}).apply(EmptyMap()); err != nil {
			return errorf(ErrBadMap, "rebalance settings: %v", err)
		}
	}
	return nil
}

func (m *Map) validateNodes() error {
	seen := map[string]NodeID{}
	for _, n := range m.Nodes {
		if err := CheckNode(n); err != nil {
			return &Error{Kind: ErrBadMap, Msg: err.Msg}
		}
		if !n.State.valid() {
			return errorf(ErrBadMap, "node %s has invalid state %d", n.ID, n.State)
		}
		for _, key := range []string{"id " + string(n.ID), "peer " + n.PeerAddr, "client " + n.ClientAddr} {
			if other, dup := seen[key]; dup {
				return errorf(ErrBadMap, "nodes %s and %s share %s", other, n.ID, key)
			}
			seen[key] = n.ID
		}
	}
	return nil
}

func (m *Map) validateShards() error {
	if m.State == Forming || len(m.Shards) == 0 {
		if m.State == OK || len(m.Shards) > 0 {
			return errorf(ErrBadMap, "state %s with %d shards", m.State, len(m.Shards))
		}
		return nil
	}
	known := make(map[NodeID]bool, len(m.Nodes))
	for _, n := range m.Nodes {
		known[n.ID] = true
	}
	covered := make([]bool, keyslot.Count)
	for i, sh := range m.Shards {
		if sh.ID != i || sh.First < 0 || sh.Last < sh.First || sh.Last >= keyslot.Count {
			return errorf(ErrBadMap, "shard %d (id %d) has slots %d-%d", i, sh.ID, sh.First, sh.Last)
		}
		if err := validatePlacement(sh, known); err != nil {
			return err
		}
		if err := m.validateImport(sh); err != nil {
			return err
		}
		if sh.Importing || sh.Retired {
			continue
		}
		for s := sh.First; s <= sh.Last; s++ {
			if covered[s] {
				return errorf(ErrBadMap, "slot %d is in two shards (one is %d)", s, i)
			}
			covered[s] = true
		}
	}
	if i := slices.Index(covered, false); i >= 0 {
		return errorf(ErrBadMap, "slot %d has no shard", i)
	}
	return nil
}

// validateImport checks an importing shard against its source: a shard
// with slots whose range starts or ends with the importing one's, and
// which gives slots to no other shard.
func (m *Map) validateImport(sh Shard) error {
	if !sh.Importing {
		if sh.From != 0 {
			return errorf(ErrBadMap, "shard %d names a source without importing", sh.ID)
		}
		return nil
	}
	if sh.Retired || sh.From < 0 || sh.From >= len(m.Shards) || sh.From == sh.ID {
		return errorf(ErrBadMap, "shard %d imports from no valid shard (%d)", sh.ID, sh.From)
	}
	src := m.Shards[sh.From]
	if src.Importing || src.Retired || sh.First < src.First || sh.Last > src.Last ||
		(sh.First != src.First && sh.Last != src.Last) {
		return errorf(ErrBadMap, "shard %d imports slots %d-%d that are not an end of shard %d's", sh.ID, sh.First, sh.Last, sh.From)
	}
	for j, o := range m.Shards {
		if j != sh.ID && o.Importing && o.From == sh.From {
			return errorf(ErrBadMap, "shards %d and %d both import from shard %d", sh.ID, j, sh.From)
		}
	}
	return nil
}

func validatePlacement(sh Shard, known map[NodeID]bool) error {
	if len(sh.Placement) == 0 {
		return errorf(ErrBadMap, "shard %d has an empty placement", sh.ID)
	}
	seen := map[NodeID]bool{}
	for _, id := range sh.Placement {
		if !known[id] || seen[id] {
			return errorf(ErrBadMap, "shard %d: node %q unknown or repeated in its placement", sh.ID, id)
		}
		seen[id] = true
	}
	for i, id := range sh.Standby {
		if !seen[id] || slices.Contains(sh.Standby[:i], id) {
			return errorf(ErrBadMap, "shard %d: standby node %q not placed or repeated", sh.ID, id)
		}
	}
	for i, p := range sh.Rebuild {
		if p < 0 || p >= len(sh.Placement) || slices.Contains(sh.Rebuild[:i], p) {
			return errorf(ErrBadMap, "shard %d: rebuild position %d out of range or repeated", sh.ID, p)
		}
	}
	for _, s := range sh.StandIns {
		if s.Width < 1 || s.Pos < 0 || s.Pos >= s.Width || slices.Index(sh.Placement, s.Node) < s.Width {
			return errorf(ErrBadMap, "shard %d: stand-in %s for position %d of width %d is not placed past the width", sh.ID, s.Node, s.Pos, s.Width)
		}
	}
	return nil
}

func (m *Map) validateSchemes() error {
	if len(m.Schemes) == 0 || m.Schemes[0] != (SchemeEntry{ID: NoneID, Spec: scheme.Builtin()}) {
		return errorf(ErrBadMap, "scheme %d must be the builtin none", NoneID)
	}
	seen := map[string]bool{}
	prev := uint16(0)
	for _, e := range m.Schemes {
		if e.ID <= prev || e.ID >= m.NextSchemeID {
			return errorf(ErrBadMap, "scheme id %d out of order or not below next id %d", e.ID, m.NextSchemeID)
		}
		if err := checkEntry(e, seen); err != nil {
			return err
		}
		prev = e.ID
	}
	if _, ok := m.SchemeByID(m.Default); !ok {
		return errorf(ErrBadMap, "default scheme %d is not in the catalogue", m.Default)
	}
	return nil
}

// checkEntry checks one entry and that its name is unique among those seen.
func checkEntry(e SchemeEntry, seen map[string]bool) error {
	if !e.Spec.Valid() {
		return errorf(ErrBadMap, "scheme %d has an invalid spec", e.ID)
	}
	if e.Alias != "" {
		if err := scheme.CheckAlias(e.Alias); err != nil {
			return wrapf(ErrBadMap, err, "scheme %d: %v", e.ID, err)
		}
	}
	key := strings.ToLower(e.Name())
	if seen[key] {
		return errorf(ErrBadMap, "scheme name %q used twice", e.Name())
	}
	seen[key] = true
	return nil
}
