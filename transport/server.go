package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Handler serves one request. It may call reply before returning or later
// from any goroutine; reply must be called exactly once per request (later
// calls are ignored). The server sets the response's ID and FlagResponse and
// clears reserved flag bits; Type, Epoch, Payload and FlagError are the
// handler's. req.Payload is freshly allocated and the handler's to keep
// (a request sent in parts arrives whole, in one buffer). reply does not
// block: responses are queued and written in batches, a large one in parts.
// resp.Payload and resp.Tail must not be modified after reply is called.
//
// Handlers run on the connection's read loop, one at a time in arrival order,
// so a handler that returns quickly keeps the connection pipelined. A handler
// that needs to wait (for other nodes, for a lock, for I/O) must do the
// waiting in its own goroutine and reply from there; otherwise every request
// behind it on the connection waits too.
type Handler func(req Frame, reply func(resp Frame))

// Server accepts connections and serves the frames on them with a Handler.
// Each connection has one reader goroutine, which calls the handler, and one
// writer goroutine, which writes queued responses in batches.
type Server struct {
	h    Handler
	opts options

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	closed    bool
	wg        sync.WaitGroup // connection goroutines
}

// NewServer returns a server that serves requests with h.
func NewServer(h Handler, opts ...Option) *Server {
	return &Server{
		h:         h,
		opts:      buildOptions(opts),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*serverConn]struct{}),
	}
}

// Serve accepts connections on l until Close and then returns nil; it
// returns an error if l fails for another reason. It may be called for
// several listeners. A connection may start with a TagFrames byte (as
// written by Client), which is skipped, so the listener can be a plain one or
// Mux.Listener(TagFrames).
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	return acceptLoop(l, s.isClosed, s.serveConn)
}

// Close closes every listener and connection and waits for the connection
// goroutines to end, which includes handlers that are running; replies
// sent after Close are dropped.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for sc := range s.conns {
		sc.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) serveConn(conn net.Conn) {
	sc := &serverConn{s: s, conn: conn, q: newSendQueue()}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.conns[sc] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		sc.q.run(conn, func(error) { sc.close() })
	}()
	go func() {
		defer s.wg.Done()
		sc.readLoop()
		sc.close()
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
	}()
}

// acceptLoop accepts connections until l fails. It returns nil if stopped()
// says the failure is a deliberate close, the error if l is closed otherwise,
// and retries with backoff on other errors (such as running out of file
// descriptors), like net/http does.
func acceptLoop(l net.Listener, stopped func() bool, handle func(net.Conn)) error {
	var backoff time.Duration
	for {
		conn, err := l.Accept()
		if err == nil {
			backoff = 0
			handle(conn)
			continue
		}
		if stopped() {
			return nil
		}
		if errors.Is(err, net.ErrClosed) {
			return err
		}
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		time.Sleep(backoff)
	}
}

// serverConn is one accepted connection.
type serverConn struct {
	s    *Server
	conn net.Conn
	q    *sendQueue
}

func (sc *serverConn) readLoop() {
	br := bufio.NewReaderSize(sc.conn, 64<<10)
	if b, err := br.Peek(1); err == nil && b[0] == TagFrames {
		br.Discard(1)
	}
	r := newFrameReader(br, sc.s.opts.maxPayload)
	for {
		req, err := r.next()
		if err != nil || req.Flags&FlagResponse != 0 {
			return // a response sent to a server is a protocol error
		}
		sc.s.h(req, sc.replier(req))
	}
}

// replier returns the reply function for req.
func (sc *serverConn) replier(req Frame) func(Frame) {
	var replied atomic.Bool
	return func(resp Frame) {
		if replied.Swap(true) {
			return
		}
		resp.ID = req.ID
		resp.Flags = resp.Flags&(knownFlags&^FlagPart) | FlagResponse
		if size := resp.Size(); size > sc.s.opts.maxPayload {
			msg := fmt.Sprintf("transport: response payload of %d bytes exceeds the limit of %d",
				size, sc.s.opts.maxPayload)
			resp.Flags |= FlagError
			resp.Payload, resp.Tail = []byte(msg), nil
		}
		_ = sc.q.push(resp) // fails only once the connection is gone
	}
}

func (sc *serverConn) close() {
	sc.q.close(ErrClosed)
	sc.conn.Close()
}
