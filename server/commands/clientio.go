package commands

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/server/resp"
)

// The client side of the node's network: an accept loop and, per
// connection, one goroutine that reads every complete request buffered,
// runs them as a pipeline (conn.go) and writes the replies in one write.
//
// Hand-written rather than redcon's server: redcon copies every request and
// allocates its argument slice (half the bytes allocated by pipelined SETs
// and a fifth of the CPU in the profiles of docs/benchmarks/analysis.md),
// and it checks no declared lengths, which needed a second, byte-by-byte
// pass over the stream to enforce the protocol limits. Here requests are
// parsed in place by a resp.RequestParser, which checks the limits as it
// goes.

// clientServer accepts client connections and serves each on its own
// goroutine until the node closes it; without a listener (a node in
// memory) it serves only the connections handed to ServeConn. It serves at most the node's
// MaxClients at once: one more is refused as Redis refuses it.
type clientServer struct {
	n     *Server
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

// errMaxClients is Redis's answer to a connection beyond maxclients.
const errMaxClients = "-ERR max number of clients reached\r\n"

// admission is what track decided for a new connection.
type admission int

const (
	admitted admission = iota
	overLimit
	closing
)

func newClientServer(n *Server, ln net.Listener) *clientServer {
	return &clientServer{n: n, ln: ln, conns: make(map[net.Conn]struct{})}
}

// serve accepts until the listener closes.
func (s *clientServer) serve() {
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.closing() || errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.n.Log.Warn("accepting a client", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !s.handle(c) {
			return
		}
	}
}

// handle serves c on a goroutine of its own, or refuses it beyond
// MaxClients; false means the server is closing.
func (s *clientServer) handle(c net.Conn) bool {
	switch s.track(c) {
	case closing:
		_ = c.Close()
		return false
	case overLimit:
		go s.refuse(c)
		return true
	}
	go func() {
		defer s.untrack(c)
		s.n.serveClient(c)
	}()
	return true
}

func (s *clientServer) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// track registers c, unless the server is closing or already serves
// MaxClients connections.
func (s *clientServer) track(c net.Conn) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.done:
		return closing
	case len(s.conns) >= s.n.Cfg.MaxClients:
		return overLimit
	}
	s.conns[c] = struct{}{}
	return admitted
}

// refuse answers a connection beyond MaxClients and closes it, counting
// it as Redis's rejected_connections does. The deadline bounds how long
// a client that does not read can hold the goroutine.
func (s *clientServer) refuse(c net.Conn) {
	s.n.Stats.RejectedConns.Add(1)
	s.n.Metrics.RejectedConns.Inc()
	s.n.Log.Debug("client refused: maxclients reached", "client", c.RemoteAddr().String(), "maxclients", s.n.Cfg.MaxClients)
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(errMaxClients))
	_ = c.Close()
}

// open is the number of client connections served, as maxclients counts
// them.
func (s *clientServer) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *clientServer) untrack(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// Close stops accepting and closes every connection. It does not wait for
// commands still running: they finish (or time out) on their own and find
// the connection closed.
func (s *clientServer) Close() error {
	s.mu.Lock()
	s.done = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	return err
}

// openClients is the number of client connections open, as maxclients
// counts them.
func (n *Server) openClients() int { return n.resp.open() }

// serveClient runs one connection: protected mode, then pipelines until
// the client leaves, sends QUIT, is killed or breaks the protocol.
func (n *Server) serveClient(c net.Conn) {
	cs, ok := n.accept(c)
	if !ok {
		return
	}
	defer n.clients.remove(cs)
	defer n.endSubscriber(cs)
	rd := requestReader{conn: countingReader{c, &n.info.meters.netIn}, maxBulk: n.Cfg.MaxValueSize, maxArgs: int64(n.Cfg.MaxArgs)}
	for {
		cmds, err := rd.readPipeline(cs.pipe.cmds[:0], !cs.authed)
		if err != nil {
			var bad *resp.RequestError
			if errors.As(err, &bad) {
				_, _ = c.Write([]byte("-ERR " + bad.Error() + "\r\n"))
				n.Log.Debug("client protocol error", "client", cs.addr, "err", bad.Msg)
			}
			return
		}
		if !n.servePipeline(c, cs, cmds) {
			return
		}
	}
}

// Request buffer sizes. A connection reads into a chunk of chunkSize (or
// the size of a larger argument), Redis's PROTO_IOBUF_LEN, so an idle
// connection holds about what a Redis client's query buffer does; minRead
// is the free space below which the next read starts a new chunk rather
// than fill the old one's tail (unless the tail has room for the rest of
// the argument being read). Argument vectors are cut from slices of
// argsChunk.
const (
	chunkSize = 16 << 10
	minRead   = 1 << 10
	argsChunk = 128
)

// requestReader reads requests from one connection. It never overwrites
// bytes it has handed out: when a chunk is full the next read goes to a new
// one, so an argument stays valid for as long as anything holds it, even
// past its pipeline (redcon's copies gave the same guarantee, and the
// command path was written against it), and the garbage collector frees a
// chunk when nothing does. Argument vectors are cut from a shared slice in
// the same way.
//
// Work is linear in the bytes read, however they are cut into reads: the
// parser (resp.RequestParser) resumes a request where the last read ended,
// so a request's arguments may lie in several chunks and only the
// argument (or header, or inline line) the last read cut is carried over
// to a new chunk. A new chunk has room for all of that argument once its
// header has told its length; an inline line, whose length nothing tells,
// gets a chunk twice the size of what it has so far. The parser is not
// called again before the bytes it said it needs are buffered.
type requestReader struct {
	conn             io.Reader
	maxBulk, maxArgs int64
	parser           resp.RequestParser
	buf              []byte // the current chunk: buf[start:end] is read, not yet parsed
	start, end       int
	need             int      // > 0: a request is incomplete, and buf[start:] must reach need bytes
	partial          [][]byte // the incomplete request's arguments so far
	args             [][]byte // the current argument chunk: args[len:cap] is free
	err              error    // a request error found after complete requests, reported next

	// Work counts, which tests check for linearity: bytes handed to the
	// parser, and bytes carried over to a new chunk.
	offered, carried int64
}

// readPipeline appends every complete request buffered to cmds, reading
// until there is at least one. A malformed request after complete ones is
// reported on the next call, so the ones before it run, as in Redis.
func (r *requestReader) readPipeline(cmds [][][]byte, preAuth bool) ([][][]byte, error) {
	if r.err != nil {
		return cmds, r.err
	}
	lim := resp.RequestLimits{MaxBulk: r.maxBulk, MaxArgs: r.maxArgs, PreAuth: preAuth}
	for {
		for r.end-r.start >= max(r.need, 1) {
			args, done, err := r.next(lim)
			if err != nil {
				if len(cmds) > 0 {
					r.err = err
					return cmds, nil
				}
				return cmds, err
			}
			if done && len(args) > 0 {
				cmds = append(cmds, args)
			}
		}
		if len(cmds) > 0 {
			return cmds, nil
		}
		if err := r.fill(); err != nil {
			return cmds, err
		}
	}
}

// next parses on from buf[start:]; done is false while the request is
// incomplete.
func (r *requestReader) next(lim resp.RequestLimits) (args [][]byte, done bool, err error) {
	in := r.partial
	if r.need == 0 { // a new request: its arguments go to the argument chunk
		if cap(r.args)-len(r.args) < 8 {
			r.args = make([][]byte, 0, argsChunk)
		}
		in = r.args[len(r.args):]
	}
	r.offered += int64(r.end - r.start)
	out, n, need, err := r.parser.Next(r.buf[r.start:r.end], lim, in)
	r.start += n
	r.need, r.partial = need, out
	if err != nil || need > 0 {
		return nil, false, err
	}
	r.partial = nil
	if len(out) > 0 && cap(out) == cap(r.args[len(r.args):]) {
		r.args = r.args[:len(r.args)+len(out)] // cut from the chunk; else append gave it its own
	}
	return out[:len(out):len(out)], true, nil
}

// fill reads more bytes, first moving the unparsed bytes to a new chunk
// when the current one cannot take the whole of what the parser needs or
// has too little room left.
func (r *requestReader) fill() error {
	pending := r.end - r.start
	if pending == 0 && len(r.buf) > chunkSize {
		r.buf, r.start, r.end = nil, 0, 0 // do not keep a large argument's chunk while idle
	}
	want := minRead // the least free space worth a read
	if short := r.need - pending; short > 0 {
		want = min(want, short) // ... unless it takes the rest of what the parser needs
	}
	if r.buf == nil || len(r.buf)-r.start < r.need || len(r.buf)-r.end < want {
		r.newChunk(pending)
	}
	got, err := r.conn.Read(r.buf[r.end:])
	r.end += got
	if got > 0 {
		return nil
	}
	if err == nil {
		err = errors.New("server: empty read")
	}
	return err
}

// newChunk carries the pending bytes over to a new chunk with room for
// all the parser needs, or, when that is not known beyond the next byte,
// twice the room they take.
func (r *requestReader) newChunk(pending int) {
	size := max(chunkSize, r.need)
	if r.need <= pending+1 {
		size = max(size, 2*pending)
	}
	chunk := make([]byte, size)
	r.carried += int64(copy(chunk, r.buf[r.start:r.end]))
	r.buf, r.start, r.end = chunk, 0, pending
}

// countingReader counts the bytes read from r (INFO's
// total_net_input_bytes).
type countingReader struct {
	r     io.Reader
	total *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.total.Add(int64(n))
	return n, err
}
