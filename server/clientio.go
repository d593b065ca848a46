package server

import (
	"errors"
	"io"
	"net"
	"sync"
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
// parsed in place by resp.ParseRequest, which checks the limits as it goes.

// clientServer accepts client connections and serves each on its own
// goroutine until the node closes it.
type clientServer struct {
	n     *Node
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

func newClientServer(n *Node, ln net.Listener) *clientServer {
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
			s.n.log.Warn("accepting a client", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !s.track(c) {
			_ = c.Close()
			return
		}
		go func() {
			defer s.untrack(c)
			s.n.serveClient(c)
		}()
	}
}

func (s *clientServer) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// track registers c, unless the server is closing.
func (s *clientServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.conns[c] = struct{}{}
	return true
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
	err := s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	return err
}

// serveClient runs one connection: protected mode, then pipelines until
// the client leaves, sends QUIT, is killed or breaks the protocol.
func (n *Node) serveClient(c net.Conn) {
	cs, ok := n.accept(c)
	if !ok {
		return
	}
	defer n.clients.remove(cs)
	rd := requestReader{conn: c, maxBulk: n.cfg.MaxValueSize, maxArgs: int64(n.cfg.MaxArgs)}
	for {
		cmds, err := rd.readPipeline(cs.pipe.cmds[:0], !cs.authed)
		if err != nil {
			var bad *resp.RequestError
			if errors.As(err, &bad) {
				_, _ = c.Write([]byte("-ERR " + bad.Error() + "\r\n"))
				n.log.Debug("client protocol error", "client", cs.addr, "err", bad.Msg)
			}
			return
		}
		if !n.servePipeline(c, cs, cmds) {
			return
		}
	}
}

// Request buffer sizes. A connection reads into a chunk of chunkSize (or
// the size of a larger request), Redis's PROTO_IOBUF_LEN, so an idle
// connection holds about what a Redis client's query buffer does; minRead
// is the free space below which the next read starts a new chunk rather
// than fill the old one's tail. Argument vectors are cut from slices of
// argsChunk.
const (
	chunkSize = 16 << 10
	minRead   = 1 << 10
	argsChunk = 128
)

// requestReader reads requests from one connection. It never overwrites
// bytes it has handed out: when a chunk is full the next read goes to a new
// one (carrying the unparsed tail over), so an argument stays valid for as
// long as anything holds it, even past its pipeline (redcon's copies gave
// the same guarantee, and the command path was written against it), and
// the garbage collector frees a chunk when nothing does. Argument vectors
// are cut from a shared slice in the same way.
type requestReader struct {
	conn             io.Reader
	maxBulk, maxArgs int64
	buf              []byte // the current chunk: buf[start:end] is read, not yet parsed
	start, end       int
	args             [][]byte // the current argument chunk: args[len:cap] is free
	err              error    // a request error found after complete requests, reported next
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
		need := 0
		for r.start < r.end && need == 0 {
			var args [][]byte
			var err error
			args, need, err = r.next(lim)
			if err != nil {
				if len(cmds) > 0 {
					r.err = err
					return cmds, nil
				}
				return cmds, err
			}
			if len(args) > 0 {
				cmds = append(cmds, args)
			}
		}
		if len(cmds) > 0 {
			return cmds, nil
		}
		if err := r.fill(need); err != nil {
			return cmds, err
		}
	}
}

// next parses one request at buf[start:]; need > 0 means it is incomplete.
func (r *requestReader) next(lim resp.RequestLimits) (args [][]byte, need int, err error) {
	if cap(r.args)-len(r.args) < 8 {
		r.args = make([][]byte, 0, argsChunk)
	}
	free := r.args[len(r.args):]
	out, n, need, err := resp.ParseRequest(r.buf[r.start:r.end], lim, free)
	if err != nil || n == 0 {
		return nil, max(need, 1), err
	}
	r.start += n
	if len(out) > 0 && cap(out) == cap(free) {
		r.args = r.args[:len(r.args)+len(out)] // cut from the chunk; else append gave it its own
	}
	return out[:len(out):len(out)], 0, nil
}

// fill reads more bytes, first moving to a new chunk when the current one
// cannot take need bytes of the pending request or has less than minRead
// free.
func (r *requestReader) fill(need int) error {
	pending := r.end - r.start
	if pending == 0 && len(r.buf) > chunkSize {
		r.buf, r.start, r.end = nil, 0, 0 // do not keep a large request's chunk while idle
	}
	if r.buf == nil || len(r.buf)-r.start < need || len(r.buf)-r.end < minRead {
		chunk := make([]byte, max(chunkSize, need, pending+minRead))
		copy(chunk, r.buf[r.start:r.end])
		r.buf, r.start, r.end = chunk, 0, pending
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
