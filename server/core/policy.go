package core

import "github.com/memgest/memgest/cluster"

// This file is where the map's scheme policy (cluster.Policy, DESIGN.md
// §7b) meets the write path: a write that names no scheme takes the one
// the policy picks for its value, which moves a key whose update crosses a
// size policy's threshold, or a cold key written again, as SCHEME.MOVE
// would (decision 0010).

// pickScheme is the scheme of a write of size bytes over cur that names
// none: the policy's pick, else the key's own scheme, else the default.
func pickScheme(m *cluster.Map, cur Current, size int) cluster.SchemeEntry {
	if id, ok := m.Policy.Pick(cur.Entry.ID, cur.Exists, size); ok {
		if cur.Exists && id == cur.Entry.ID {
			return cur.Entry
		}
		if e, ok := m.SchemeByID(id); ok {
			return e
		}
	}
	if cur.Exists {
		return cur.Entry
	}
	return m.DefaultScheme()
}
