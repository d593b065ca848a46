package peer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/transport"
)

// StaleEpochPrefix starts the error a node returns for a frame made under
// an older cluster map than its own (DESIGN.md §1 fencing).
const StaleEpochPrefix = "STALEEPOCH "

// StaleEpoch says whether err is a peer's refusal of a frame from an older
// map, and the peer's epoch.
func StaleEpoch(err error) (uint64, bool) {
	var re *transport.RemoteError
	if !errors.As(err, &re) || !strings.HasPrefix(re.Msg, StaleEpochPrefix) {
		return 0, false
	}
	e, perr := strconv.ParseUint(strings.TrimPrefix(re.Msg, StaleEpochPrefix), 10, 64)
	return e, perr == nil
}

// ErrFrame is an error reply.
func ErrFrame(err error) transport.Frame {
	return transport.Frame{Flags: transport.FlagError, Payload: []byte(err.Error())}
}

// Handler answers one request's payload.
type Handler func(payload []byte) ([]byte, error)

// Stream answers one request itself, through reply: a read that looks
// pieces up where it is called and checks and sends them from a worker
// when they are large, or a forwarded command whose reply is spooled.
type Stream func(req transport.Frame, reply func(transport.Frame))

// Mode is where a message is served.
type Mode uint8

const (
	// OnLoop serves it on its connection's read loop, in the order the
	// sender sent it: short requests whose order matters (pieces,
	// releases, directory entries, chunk updates).
	OnLoop Mode = iota
	// OffLoop serves it in a goroutine of its own, so that the read loop
	// keeps going: requests that may block (listings, scans, stats,
	// forwarded commands, reads of chunks).
	OffLoop
	// Unfenced is OffLoop for a message accepted whatever the sender's
	// epoch: a joining node has no map yet, proposals are ordered by Raft
	// itself, and a heartbeat is how a node with an old map learns it was
	// fenced.
	Unfenced
)

// Maps is what a Router reads of the control plane.
type Maps interface {
	Map() *cluster.Map
	WaitEpoch(ctx context.Context, epoch uint64) (*cluster.Map, error)
}

// route is how one message type is served.
type route struct {
	handler Handler
	stream  Stream // nil: the handler
	mode    Mode
	// bulk: a payload that came in parts (over transport.PartSize) is
	// served by a worker, off the read loop, so that the frames behind it
	// on the connection are not held up while it is stored.
	bulk bool
}

// Router serves a node's peer frames: it checks each frame's map epoch
// against the node's (a frame from an older map is refused, one from a
// newer map waits until the node has it) and runs the handler each
// concern registered for its type, where its Mode says. A node builds one,
// each of its concerns registers its messages, and Maps is set before the
// first frame is served.
type Router struct {
	// Maps is the node's control plane.
	Maps Maps
	// work runs a function on the node's worker pool.
	work   func(func())
	routes [256]route
}

// NewRouter returns a router with no routes whose bulk payloads run on
// work.
func NewRouter(work func(func())) *Router { return &Router{work: work} }

// Handle serves message type typ with h, in mode.
func (r *Router) Handle(typ uint8, mode Mode, h Handler) {
	r.routes[typ] = route{handler: h, mode: mode}
}

// HandleBulk serves typ with h on the read loop, or on a worker when its
// payload came in parts.
func (r *Router) HandleBulk(typ uint8, h Handler) {
	r.routes[typ] = route{handler: h, mode: OnLoop, bulk: true}
}

// HandleStream serves typ with s in mode when the frame's epoch is the
// node's, and with h otherwise (once the node has the sender's map) and
// for requests a node sends itself.
func (r *Router) HandleStream(typ uint8, mode Mode, h Handler, s Stream) {
	r.routes[typ] = route{handler: h, stream: s, mode: mode}
}

// Handler returns typ's handler, for a request a node sends itself; an
// unknown type's answers with an error.
func (r *Router) Handler(typ uint8) Handler {
	if h := r.routes[typ].handler; h != nil {
		return h
	}
	return func([]byte) ([]byte, error) { return nil, fmt.Errorf("server: unknown peer message type %d", typ) }
}

// Serve serves one frame from another node (a transport.Handler).
func (r *Router) Serve(req transport.Frame, reply func(transport.Frame)) {
	rt := &r.routes[req.Type]
	if rt.mode == Unfenced {
		go r.ServeNow(req, reply)
		return
	}
	local := r.Maps.Map().Epoch
	switch {
	case req.Epoch < local:
		reply(ErrFrame(errors.New(StaleEpochPrefix + strconv.FormatUint(local, 10))))
	case req.Epoch > local:
		go r.serveAfter(req, reply)
	case rt.mode == OffLoop:
		go r.run(rt, req, reply)
	case rt.bulk && len(req.Payload) > transport.PartSize:
		r.work(func() { r.ServeNow(req, reply) })
	default:
		r.run(rt, req, reply)
	}
}

// serveAfter serves a frame from a newer map once the node has it.
func (r *Router) serveAfter(req transport.Frame, reply func(transport.Frame)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.Maps.WaitEpoch(ctx, req.Epoch); err != nil {
		reply(ErrFrame(fmt.Errorf("server: frame from epoch %d, this node is at %d", req.Epoch, r.Maps.Map().Epoch)))
		return
	}
	r.ServeNow(req, reply)
}

// run serves req through its stream, if it has one.
func (r *Router) run(rt *route, req transport.Frame, reply func(transport.Frame)) {
	if rt.stream != nil {
		rt.stream(req, reply)
		return
	}
	r.ServeNow(req, reply)
}

// ServeNow serves req with its handler, whatever its epoch.
func (r *Router) ServeNow(req transport.Frame, reply func(transport.Frame)) {
	out, err := r.Handler(req.Type)(req.Payload)
	if err != nil {
		reply(ErrFrame(err))
		return
	}
	reply(transport.Frame{Type: req.Type, Payload: out})
}
