package commands

import (
	"context"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/resp"
)

// SCHEME.POLICY: the cluster's scheme policy (DESIGN.md §7b, decision
// 0010), kept in the map, so Raft replicates it and it outlives any node.
func init() {
	register("scheme.policy", &command{run: cmdSchemePolicy, needsFormed: true})
}

// cmdSchemePolicy shows the policy (no argument), removes it (OFF), sets
// KVMD's size-threshold mode (SIZE <bytes> <below> <at-or-above>) or a
// temperature policy (TEMPERATURE <hot> <cold> <idle-seconds>). Bad
// input is refused before anything is proposed, and the map refuses a
// policy whose schemes cannot be used, so either changes nothing.
func cmdSchemePolicy(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args) == 1 {
		return policyReply(n.Ctl.Map())
	}
	c, bad := parsePolicy(args)
	if bad.IsError() {
		return bad
	}
	if c.Kind == cluster.PolicyTemperature && n.packed(c.Hot) {
		return resp.Errorf("ERR memgest: the hot scheme of a temperature policy cannot be a packed scheme (%s): idle keys are found by scanning the records of the coordinators' primary stores, which a packed scheme's keys do not have", c.Hot)
	}
	if _, err := n.Propose(ctx, c); err != nil {
		return errReply(err)
	}
	return resp.OK()
}

// policySyntax is SCHEME.POLICY's syntax, for its errors.
const policySyntax = "SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>]"

// parsePolicy reads SCHEME.POLICY's arguments into the map command.
func parsePolicy(args [][]byte) (cluster.SetPolicy, resp.Reply) {
	kind := strings.ToLower(string(args[1]))
	switch {
	case kind == cluster.PolicyOff && len(args) == 2:
		return cluster.SetPolicy{Kind: cluster.PolicyOff}, resp.Reply{}
	case kind == cluster.PolicySize && len(args) == 5:
		t, ok := resp.ParseInt(args[2])
		if !ok || t < 1 {
			return cluster.SetPolicy{}, resp.Err("ERR memgest: the threshold must be a positive number of bytes")
		}
		return cluster.SetPolicy{Kind: cluster.PolicySize, Threshold: t, Below: string(args[3]), Above: string(args[4])}, resp.Reply{}
	case kind == cluster.PolicyTemperature && len(args) == 5:
		idle, ok := resp.ParseInt(args[4])
		if !ok || idle < 1 {
			return cluster.SetPolicy{}, resp.Err("ERR memgest: the idle time must be a positive number of seconds")
		}
		return cluster.SetPolicy{Kind: cluster.PolicyTemperature, Hot: string(args[2]), Cold: string(args[3]), IdleSeconds: idle}, resp.Reply{}
	}
	return cluster.SetPolicy{}, resp.Err("ERR syntax error. Try " + policySyntax)
}

// policyReply describes m's policy: its kind ("off" for none) and
// parameters, schemes by name.
func policyReply(m *cluster.Map) resp.Reply {
	p := m.Policy
	if p == nil {
		return resp.Map(resp.BulkString("policy"), resp.BulkString(cluster.PolicyOff))
	}
	name := func(id uint16) resp.Reply {
		e, _ := m.SchemeByID(id)
		return resp.BulkString(e.Name())
	}
	fields := []resp.Reply{resp.BulkString("policy"), resp.BulkString(p.Kind)}
	switch p.Kind {
	case cluster.PolicySize:
		fields = append(fields,
			resp.BulkString("threshold"), resp.Int(p.Threshold),
			resp.BulkString("below"), name(p.Below),
			resp.BulkString("at_or_above"), name(p.Above))
	case cluster.PolicyTemperature:
		fields = append(fields,
			resp.BulkString("hot"), name(p.Hot),
			resp.BulkString("cold"), name(p.Cold),
			resp.BulkString("idle_seconds"), resp.Int(p.IdleSeconds))
	}
	return resp.Map(fields...)
}

// policyKind names m's policy for INFO: its kind, or "off".
func policyKind(m *cluster.Map) string {
	if m.Policy == nil {
		return cluster.PolicyOff
	}
	return m.Policy.Kind
}

// packed says whether the scheme called name (registered or a spec) packs
// its objects into chunks (kind.Packed): its keys have no primary record.
func (n *Server) packed(name string) bool {
	e, ok := n.Ctl.Map().Scheme(name)
	if !ok {
		sp, err := scheme.Parse(name)
		if err != nil {
			return false // the map refuses it
		}
		e = cluster.SchemeEntry{Spec: sp}
	}
	_, packed := n.KindOf(e).(kind.Packed)
	return packed
}
