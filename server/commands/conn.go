package commands

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// connState is one client connection's session: protocol version, auth,
// name. Forwarded commands run under a synthetic state with forwarded set.
// The connection's own goroutines read it freely (session commands never
// run concurrently with others of the same connection); mu orders its
// writes of name and proto with CLIENT LIST on other connections.
type connState struct {
	mu        sync.Mutex
	id        int64
	proto     int
	authed    bool
	forwarded bool
	imported  bool // forwarded by a migration's source (forwardReq.Import)
	name      string
	addr      string
	laddr     string
	created   time.Time
	lastCmd   atomic.Pointer[resp.CommandSpec]
	lastWrite []byte       // under mu: the first key of the last write that succeeded, for WAIT
	out       []byte       // reply buffer reused across pipelines (conn goroutine only)
	pipe      pipelineBufs // runPipeline's slices, reused likewise
	conn      net.Conn     // what CLIENT KILL from another connection closes
	killed    atomic.Bool  // CLIENT KILL of itself: close after the reply
	pubsub    *subscriber  // its pub/sub side, once it used a subscription command (set under mu)
	tx        *txState     // MULTI's queue and WATCH's versions (tx.go); nil: none
}

var nextConnID atomic.Int64

// sub is the session a fan-out runs its per-node parts under: same
// protocol, already authenticated.
func (cs *connState) sub() *connState {
	return &connState{id: cs.id, proto: cs.proto, authed: true, forwarded: cs.forwarded, imported: cs.imported, addr: cs.addr, created: cs.created}
}

// accept applies protected mode (with no password and a non-loopback bind,
// only loopback clients are served, as Redis does) and registers the
// connection's session.
func (n *Server) accept(c net.Conn) (*connState, bool) {
	remote := c.RemoteAddr().String()
	if n.protectedRefuses(remote) {
		_, _ = c.Write([]byte("-DENIED memgest is running in protected mode because no password is set and it is bound beyond loopback. " +
			"Set --requirepass, bind to 127.0.0.1, or disable protected mode with --protected-mode=false.\r\n"))
		return nil, false
	}
	cs := &connState{
		id: nextConnID.Add(1), proto: 2, authed: !n.authRequired(),
		addr: remote, laddr: c.LocalAddr().String(), created: time.Now(), conn: c,
	}
	n.clients.add(cs)
	n.Stats.Connections.Add(1)
	return cs, true
}

// protectedRefuses applies protected mode to a client address.
func (n *Server) protectedRefuses(remote string) bool {
	return n.Cfg.ProtectedRefuses(remote, n.authRequired())
}

// servePipeline runs the commands a client pipelined (every complete
// request read at once): commands on disjoint keys run concurrently,
// commands sharing a key or changing the session run in order, and the
// replies go out in order in one write. It reports whether the connection
// stays open (not after QUIT, CLIENT KILL of itself or a failed write).
func (n *Server) servePipeline(c net.Conn, cs *connState, cmds [][][]byte) bool {
	if cs.pubsub != nil || subscribes(cmds) {
		return n.serveSubscribed(c, cs, cmds)
	}
	defer cs.pipe.reset(cmds)
	for i := range cmds {
		if isQuit(cmds[i]) {
			cmds = cmds[:i+1] // nothing after QUIT runs
			break
		}
	}
	replies, protos := n.runPipeline(cs, cmds)
	buf, large := renderReplies(cs.out[:0], replies, protos)
	if cap(buf) <= 1<<20 {
		cs.out = buf
	}
	var err error
	var wrote int64
	if large == nil {
		var k int
		k, err = c.Write(buf)
		wrote = int64(k)
	} else {
		wrote, err = large.WriteTo(c)
	}
	n.info.meters.netOut.Add(wrote)
	if err != nil {
		return false
	}
	return !isQuit(cmds[len(cmds)-1]) && !cs.killed.Load()
}

// inlineReply is the largest bulk string copied into a pipeline's reply
// buffer; larger ones (a GET of a huge value) are written from where they
// are, with writev.
const inlineReply = 64 << 10

// renderReplies encodes replies into buf. When one holds a bulk string
// over inlineReply, large is the whole reply as segments, buf's and those
// strings, to write in order; otherwise large is nil and buf is all.
func renderReplies(buf []byte, replies []resp.Reply, protos []int) ([]byte, net.Buffers) {
	var large net.Buffers
	mark := 0 // buf[:mark] is in large already
	for i, r := range replies {
		var body []byte
		buf, body = r.AppendHead(buf, protos[i], inlineReply)
		if body != nil {
			// buf may move as it grows; large keeps the old array's bytes,
			// which never change.
			large = append(large, buf[mark:], body)
			mark = len(buf)
			buf = append(buf, resp.BulkEnd...)
		}
	}
	if large != nil {
		large = append(large, buf[mark:])
	}
	return buf, large
}

func isQuit(args [][]byte) bool {
	return len(args) > 0 && bytes.EqualFold(args[0], []byte("quit"))
}

// pipelineBufs holds one connection's pipeline slices between pipelines,
// so a pipeline allocates none of them (the allocation profile of pipelined
// SETs showed them at a fifth of all bytes). Only the connection's
// goroutine uses them, and only within servePipeline.
type pipelineBufs struct {
	cmds    [][][]byte
	replies []resp.Reply
	protos  []int
	group   setGroup
}

// maxPipelineBufs bounds the slices kept between pipelines.
const maxPipelineBufs = 1024

// reset drops what the last pipeline left (so values are not kept alive)
// and keeps the slices unless they grew past maxPipelineBufs.
func (b *pipelineBufs) reset(cmds [][][]byte) {
	clear(cmds)
	clear(b.replies)
	if cap(cmds) > maxPipelineBufs {
		*b = pipelineBufs{}
		return
	}
	b.cmds = cmds[:0]
}

// sized returns the reply and protocol slices for n commands.
func (b *pipelineBufs) sized(n int) ([]resp.Reply, []int) {
	if cap(b.replies) < n {
		b.replies, b.protos = make([]resp.Reply, n), make([]int, n)
	}
	b.replies, b.protos = b.replies[:n], b.protos[:n]
	return b.replies, b.protos
}

// runPipeline executes cmds with the ordering rule of servePipeline and
// returns each reply with the protocol version it is to be written in (a
// HELLO in the pipeline changes it for the replies after it). The slices
// returned are the connection's, valid until its next pipeline.
func (n *Server) runPipeline(cs *connState, cmds [][][]byte) ([]resp.Reply, []int) {
	replies, protos := cs.pipe.sized(len(cmds))
	if len(cmds) == 1 {
		replies[0] = n.execute(context.Background(), cs, cmds[0])
		protos[0] = cs.proto
		return replies, protos
	}
	var wg sync.WaitGroup
	var busy map[string]*sync.WaitGroup // key → the concurrent command using it
	group := &cs.pipe.group             // empty: every flush empties it
	ctx := context.Background()
	for i, args := range cmds {
		p := parseCommand(args)
		// While a transaction queues, and for WATCH, which changes the
		// session, commands run in order.
		spec, keys := p.spec, p.keys
		concurrent := len(keys) > 0 && !cs.queuing() && spec != watchSpec
		if !concurrent {
			group.flush(n, ctx, cs, replies)
			wg.Wait()
			clear(busy)
			replies[i] = n.executeParsed(ctx, cs, args, p)
			protos[i] = cs.proto
			continue
		}
		protos[i] = cs.proto
		if group.touches(keys) || len(group.writes) == maxSetGroup {
			group.flush(n, ctx, cs, replies)
		}
		for _, k := range keys {
			if w, ok := busy[string(k)]; ok {
				w.Wait()
			}
		}
		if n.joins(cs, p, args) {
			group.add(i, args[1], args[2])
			continue
		}
		if slot, ok := n.runsLocally(spec, args, keys); ok {
			p.local, p.slot = true, slot
			replies[i] = n.executeParsed(ctx, cs, args, p)
			continue
		}
		done := &sync.WaitGroup{}
		done.Add(1)
		if busy == nil {
			busy = make(map[string]*sync.WaitGroup)
		}
		for _, k := range keys {
			busy[string(k)] = done
		}
		wg.Add(1)
		n.Workers.Go(func() {
			defer wg.Done()
			defer done.Done()
			replies[i] = n.executeParsed(ctx, cs, args, p)
		})
	}
	group.flush(n, ctx, cs, replies)
	wg.Wait()
	return replies, protos
}

// runsLocally says whether a pipelined command will finish without waiting
// on another node, so running it inline costs less than handing it to a
// worker: every key is coordinated here, no write of it is in flight, and
// it is a read of a key whose value is local (not split) or a write whose
// scheme is none. A wrong guess only costs concurrency, never correctness.
// It also returns the keys' slot when they have one (a one-key command),
// else -1, for coordinate to hold without hashing the key again.
func (n *Server) runsLocally(spec *resp.CommandSpec, args, keys [][]byte) (int, bool) {
	m := n.Ctl.Map()
	if m.State != cluster.OK || (spec.Name == "set" && len(args) > 3) {
		return -1, false // SET with options may name a scheme
	}
	write := spec.HasFlag("write")
	// Whether the key's scheme decides: a read runs elsewhere only if its
	// scheme gathers pieces (split); a write, unless it commits at once
	// (none).
	t := n.Schemes(m)
	schemeMatters := write && !t.AllImmediate || !write && !t.AllLocalReads
	slot := -1
	for _, k := range keys {
		ks := keyslot.Of(k)
		if c, ok := m.Coordinator(ks); !ok || c.ID != n.NodeID {
			return -1, false
		}
		if len(keys) == 1 {
			slot = ks
		}
		s := n.Inflight.Shard(k)
		s.Mu.Lock()
		busy := s.Newest(k) != nil
		s.Mu.Unlock()
		if busy {
			return -1, false
		}
		if !schemeMatters {
			continue
		}
		id := m.Default
		if meta, ok := n.Primary.Meta(k); ok {
			id = meta.Scheme
		} else if !write {
			continue
		}
		if sch, ok := t.Lookup(id); !ok || !sch.Traits().ReadsLocally || (write && !sch.Traits().Immediate) {
			return -1, false
		}
	}
	return slot, true
}

// clientRegistry lists open connections for CLIENT LIST and INFO clients.
type clientRegistry struct {
	mu sync.Mutex
	m  map[int64]*connState
}

func (r *clientRegistry) add(cs *connState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[int64]*connState)
	}
	r.m[cs.id] = cs
}

func (r *clientRegistry) remove(cs *connState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, cs.id)
}

func (r *clientRegistry) list() []*connState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*connState, 0, len(r.m))
	for _, cs := range r.m {
		out = append(out, cs)
	}
	return out
}
