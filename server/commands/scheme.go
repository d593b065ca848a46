package commands

import (
	"context"
	"strconv"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// memgest's own commands (DESIGN.md §6): schemes and per-key resilience.
func init() {
	ctl := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("scheme.create", ctl(cmdSchemeCreate))
	register("scheme.list", ctl(cmdSchemeList))
	register("scheme.info", ctl(cmdSchemeInfo))
	register("scheme.drop", ctl(cmdSchemeDrop))
	register("scheme.default", ctl(cmdSchemeDefault))
	register("scheme.of", ctl(cmdSchemeOf))
	register("scheme.move", ctl(cmdSchemeMove))
	register("scheme.verify", ctl(cmdSchemeVerify))
	register("scheme", &command{run: cmdSchemeContainer, needsFormed: true})
}

// cmdSchemeContainer serves the space-separated spelling (SCHEME CREATE ...)
// by running the dotted command's handler: the subcommand's spec has the
// same keys and arity, so dispatch has routed it and checked them already
// (and holds its keys' slots, which execute would take again).
func cmdSchemeContainer(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	sub := strings.ToLower(string(args[1]))
	if sub == "help" {
		return schemeHelp()
	}
	dotted := append([][]byte{[]byte("scheme." + sub)}, args[2:]...)
	cmd, ok := commands["scheme."+sub]
	if !ok {
		return resp.Errorf("ERR unknown subcommand '%s'. Try SCHEME HELP.", args[1])
	}
	return cmd.run(n, ctx, cs, dotted)
}

func schemeHelp() resp.Reply {
	lines := []string{
		"SCHEME <subcommand> [<arg> ...]. Subcommands are:",
		"CREATE <alias> <spec>  -- name a scheme: none, rep:R or split:K+M.",
		"LIST                   -- every scheme, its spec and whether it is the default.",
		"INFO <name>            -- spec, tolerance, nodes, keys, bytes and overhead.",
		"DROP <name>            -- remove a scheme no key uses.",
		"DEFAULT [<name>]       -- show or set the scheme of new keys.",
		"OF <key>               -- a key's scheme, version and where its pieces live.",
		"MOVE <key> <name>      -- change a key's scheme atomically.",
		"VERIFY <key>           -- check every piece of a key against its committed version.",
		"POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>] -- show, set or remove the scheme policy.",
	}
	items := make([]resp.Reply, len(lines))
	for i, l := range lines {
		items[i] = resp.Simple(l)
	}
	return resp.Array(items...)
}

func cmdSchemeCreate(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	spec, err := scheme.Parse(string(args[2]))
	if err != nil {
		return errReply(err)
	}
	if _, err := n.Propose(ctx, cluster.CreateScheme{Alias: string(args[1]), Spec: spec}); err != nil {
		return errReply(err)
	}
	return resp.OK()
}

func cmdSchemeList(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	m := n.Ctl.Map()
	def := m.DefaultScheme()
	items := make([]resp.Reply, 0, len(m.Schemes))
	for _, e := range m.Schemes {
		items = append(items, resp.Map(
			resp.BulkString("name"), resp.BulkString(e.Name()),
			resp.BulkString("spec"), resp.BulkString(e.Spec.String()),
			resp.BulkString("id"), resp.Int(int64(e.ID)),
			resp.BulkString("tolerance"), resp.Int(int64(e.Spec.Tolerance())),
			resp.BulkString("default"), intBool(e.ID == def.ID),
		))
	}
	return resp.Array(items...)
}

func cmdSchemeInfo(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	m := n.Ctl.Map()
	e, ok := m.Scheme(string(args[1]))
	if !ok {
		return resp.Errorf("ERR memgest: no scheme named '%s'", args[1])
	}
	all, err := n.ClusterStats(ctx)
	if err != nil {
		return errReply(err)
	}
	u := SumSchemes(all)[e.ID]
	if u == nil {
		u = &SchemeUsage{}
	}
	ratio := "0"
	if u.Logical > 0 {
		ratio = strconv.FormatFloat(float64(u.Stored)/float64(u.Logical), 'f', 3, 64)
	}
	fields := []resp.Reply{
		resp.BulkString("name"), resp.BulkString(e.Name()),
		resp.BulkString("spec"), resp.BulkString(e.Spec.String()),
		resp.BulkString("id"), resp.Int(int64(e.ID)),
		resp.BulkString("default"), intBool(e.ID == m.DefaultScheme().ID),
		resp.BulkString("tolerance"), resp.Int(int64(e.Spec.Tolerance())),
		resp.BulkString("nodes"), resp.Int(int64(e.Spec.Nodes())),
		resp.BulkString("failure_domain"), resp.BulkString(m.DomainKind()),
		resp.BulkString("survives_domain_loss"), intBool(m.SurvivesDomainLoss(e.Spec)),
		resp.BulkString("keys"), resp.Int(u.Keys),
		resp.BulkString("logical_bytes"), resp.Int(u.Logical),
		resp.BulkString("stored_bytes"), resp.Int(u.Stored),
		resp.BulkString("pieces"), resp.Int(u.Pieces),
		resp.BulkString("overhead"), resp.BulkString(ratio),
		resp.BulkString("expected_overhead"), resp.BulkString(strconv.FormatFloat(e.Spec.Overhead(), 'f', 3, 64)),
	}
	if i, ok := n.KindOf(e).(schemeInfoer); ok {
		for _, d := range i.Info(u.Keys, u.Logical, u.Stripe) {
			fields = append(fields, resp.BulkString(d.Name), detailReply(d.Value))
		}
	}
	if p := m.Policy.Temperature(); p != nil && p.Names(e.ID) {
		fields = append(fields, temperatureFields(p, e.ID, all)...)
	}
	if r, ok := n.liveCluster(m, all).model(e); ok {
		fields = append(fields, reliabilityFields(r)...)
	}
	return resp.Map(fields...)
}

// temperatureFields are SCHEME.INFO's account of the temperature policy
// that names scheme id: its role and the cluster's moves and the memory
// they saved (decision 0010).
func temperatureFields(p *cluster.Policy, id uint16, all []NodeStats) []resp.Reply {
	role := "cold"
	if p.Hot == id {
		role = "hot"
	}
	var toCold, toHot, saved int64
	for _, st := range all {
		toCold, toHot, saved = toCold+st.PolicyToCold, toHot+st.PolicyToHot, saved+st.PolicyBytesSaved
	}
	return []resp.Reply{
		resp.BulkString("temperature_role"), resp.BulkString(role),
		resp.BulkString("policy_moves_to_cold"), resp.Int(toCold),
		resp.BulkString("policy_moves_to_hot"), resp.Int(toHot),
		resp.BulkString("policy_bytes_saved"), resp.Int(saved),
	}
}

// reliabilityFields are SCHEME.INFO's modelled durability over a year
// on this cluster, and the inputs it came from (docs/reliability.md).
func reliabilityFields(r LiveReliability) []resp.Reply {
	f := func(x float64) resp.Reply { return resp.BulkString(strconv.FormatFloat(x, 'g', 4, 64)) }
	return []resp.Reply{
		resp.BulkString("nines_per_year"), f(r.Nines),
		resp.BulkString("loss_probability_per_year"), f(r.LossProbability),
		resp.BulkString("mttdl_years"), f(r.MTTDLHours / reliability.HoursPerYear),
		resp.BulkString("model_nodes"), resp.Int(int64(r.Cluster.Nodes)),
		resp.BulkString("model_node_mttf_hours"), f(r.Cluster.NodeMTTF),
		resp.BulkString("model_detection_seconds"), f(r.Cluster.Detection * 3600),
		resp.BulkString("model_rebuild_seconds"), f(r.Cluster.Rebuild * 3600),
		resp.BulkString("model_rebuild_rate"), f(r.RebuildRate),
		resp.BulkString("model_rebuild_rate_source"), resp.BulkString(r.RateSource),
	}
}

// schemeInfoer is a bound scheme whose SCHEME.INFO adds fields of its
// kind to the usage every scheme reports (stripe: its bytes broken down).
type schemeInfoer interface {
	Info(keys, logical int64, u *stripe.Usage) []kind.Detail
}

// cmdSchemeDrop refuses a scheme that keys still use. The key count and the
// drop are two steps: a write racing the drop can still use the scheme
// (docs/decisions/0002 explains how issue 4 closes this with a "draining"
// state).
func cmdSchemeDrop(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	e, ok := n.Ctl.Map().Scheme(string(args[1]))
	if !ok {
		return resp.Errorf("ERR memgest: no scheme named '%s'", args[1])
	}
	all, err := n.ClusterStats(ctx)
	if err != nil {
		return errReply(err)
	}
	if u := SumSchemes(all)[e.ID]; u != nil && u.Keys > 0 {
		return resp.Errorf("ERR memgest: scheme '%s' is used by %d keys; move them first (SCHEME.MOVE)", e.Name(), u.Keys)
	}
	if _, err := n.Propose(ctx, cluster.DropScheme{Name: string(args[1])}); err != nil {
		return errReply(err)
	}
	return resp.OK()
}

func cmdSchemeDefault(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	switch {
	case len(args) == 1:
		return resp.BulkString(n.Ctl.Map().DefaultScheme().Name())
	case len(args) > 2:
		return resp.ErrWrongArity(string(args[0]))
	}
	if _, err := n.ResolveScheme(ctx, string(args[1])); err != nil {
		return errReply(err)
	}
	if _, err := n.Propose(ctx, cluster.SetDefault{Name: string(args[1])}); err != nil {
		return errReply(err)
	}
	return resp.OK()
}

// cmdSchemeOf describes a key's resilience: scheme, version, each piece's
// node, and how many node failures it tolerates now (its scheme's tolerance
// less the failed nodes among its pieces).
func cmdSchemeOf(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	cur, err := n.Get(ctx, args[1])
	if err != nil {
		return errReply(err)
	}
	if !cur.Exists {
		return resp.Nil()
	}
	m := n.Ctl.Map()
	pieces, tolerates, details := n.describePieces(m, args[1], cur)
	ttl := int64(-1)
	if cur.Meta.ExpireAt != 0 {
		ttl = cur.Meta.ExpireAt - core.NowMs()
	}
	fields := []resp.Reply{
		resp.BulkString("scheme"), resp.BulkString(cur.Entry.Name()),
		resp.BulkString("spec"), resp.BulkString(cur.Entry.Spec.String()),
		resp.BulkString("version"), resp.Int(int64(cur.Meta.Version)),
		resp.BulkString("slot"), resp.Int(int64(keyslot.Of(args[1]))),
		resp.BulkString("bytes"), resp.Int(int64(len(cur.Value))),
		resp.BulkString("pttl"), resp.Int(ttl),
		resp.BulkString("pieces"), resp.Array(pieces...),
		resp.BulkString("tolerates"), resp.Int(int64(tolerates)),
		resp.BulkString("failure_domain"), resp.BulkString(m.DomainKind()),
		resp.BulkString("survives_domain_loss"), intBool(keySurvivesDomainLoss(m, args[1], cur.Entry.Spec)),
	}
	for _, d := range details {
		fields = append(fields, resp.BulkString(d.Name), detailReply(d.Value))
	}
	return resp.Map(fields...)
}

// keySurvivesDomainLoss says whether key, under spec, survives the loss
// of any one failure domain (decision 0021): its shard's holders for the
// scheme's width put no more in one domain than the scheme tolerates.
func keySurvivesDomainLoss(m *cluster.Map, key []byte, sp scheme.Spec) bool {
	sh := m.ShardOf(keyslot.Of(key))
	return sh != nil && m.ShardSurvivesDomainLoss(sh, sp)
}

// describePieces lists where key's pieces live, how many more failures
// the key survives now, and fields of its kind: a packed kind describes
// its chunk's list itself (kind.Describer); any other kind's pieces are
// its targets, and its tolerance shrinks by each one that is not up.
func (n *Server) describePieces(m *cluster.Map, key []byte, cur core.Current) ([]resp.Reply, int, []kind.Detail) {
	self, _ := m.Node(n.NodeID)
	out := []resp.Reply{pieceInfo("primary", 0, self, false)}
	sch := n.KindOf(cur.Entry)
	if d, ok := sch.(kind.Describer); ok {
		if l, ok := d.Layout(m, key); ok {
			for _, p := range l.Pieces {
				out = append(out, pieceInfo(p.Role, p.Index, p.Node, p.Rebuilding))
			}
			return out, l.Tolerates, l.Details
		}
	}
	targets, _ := sch.Targets(m, key)
	down := 0
	role := sch.Traits().Role
	for _, t := range targets {
		if t.Node.State != cluster.Up {
			down++
		}
		out = append(out, pieceInfo(role, t.Index, t.Node, false))
	}
	return out, max(cur.Entry.Spec.Tolerance()-down, 0), nil
}

// pieceInfo is one row of SCHEME.OF's pieces: role, index, node id,
// client address, state (the node's, or "rebuilding" for a position
// whose pieces are lost until its rebuild) and the node's zone.
func pieceInfo(role string, index int, node cluster.Node, rebuilding bool) resp.Reply {
	state := node.State.String()
	if rebuilding {
		state = "rebuilding"
	}
	return resp.Array(resp.BulkString(role), resp.Int(int64(index)),
		resp.BulkString(string(node.ID)), resp.BulkString(node.ClientAddr), resp.BulkString(state),
		resp.BulkString(node.Zone))
}

// cmdSchemeMove rewrites a key under another scheme at a higher version,
// then releases the old pieces (Ring §5.2): the coordinator is the same for
// every scheme, so no distributed transaction is needed, and the key is
// readable at every instant. Replies 1 if moved, 0 if already there.
func cmdSchemeMove(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	target, err := n.ResolveScheme(ctx, string(args[2]))
	if err != nil {
		return errReply(err)
	}
	var existed, moved bool
	err = n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		existed = cur.Exists
		moved = cur.Exists && cur.Entry.ID != target.ID
		if !moved {
			return nil, nil
		}
		return &core.WriteOp{Key: args[1], Value: cur.Value, ExpireAt: cur.Meta.ExpireAt, Entry: target,
			Shrinks: target.Spec.Overhead() <= cur.Entry.Spec.Overhead()}, nil
	})
	switch {
	case err != nil:
		return errReply(err)
	case !existed:
		return resp.Err("ERR no such key")
	}
	return intBool(moved)
}
