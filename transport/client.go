package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Client is one long-lived multiplexed connection to one peer. Calls from
// any number of goroutines share the connection: requests are pipelined
// (sent without waiting for earlier responses) and responses are matched to
// requests by ID, in whatever order they come. The connection is made on
// first use; after it breaks, every call in flight fails and the next call
// dials again. A Client is safe for concurrent use.
type Client struct {
	addr   string
	opts   options
	nextID atomic.Uint64

	ctx    context.Context // cancelled by Close; bounds dials
	cancel context.CancelFunc

	mu      sync.Mutex
	cc      *clientConn // current connection, nil before the first call and after a failure
	dialing *dialCall   // dial in progress, shared by every caller that needs it
	closed  bool
}

// dialCall is one connection attempt; done is closed when cc or err is set.
type dialCall struct {
	done chan struct{}
	cc   *clientConn
	err  error
}

// Dial returns a Client for the peer at addr. It does not connect: the first
// call does.
func Dial(addr string, opts ...Option) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{addr: addr, opts: buildOptions(opts), ctx: ctx, cancel: cancel}
}

// Call sends req and waits for its response. It sets req.ID and clears
// FlagResponse, FlagPart and reserved flag bits; Type, Epoch and Payload are the
// caller's. A response with FlagError is returned together with a
// *RemoteError carrying its message. If ctx ends first, Call returns the
// context's error and the late response is dropped. req.Payload and
// req.Tail must not be modified after the call, even one that returned
// early: the transport may still be writing them. A payload over PartSize
// is sent in parts, interleaved with the connection's other frames.
func (c *Client) Call(ctx context.Context, req Frame) (Frame, error) {
	return c.call(ctx, req, 0)
}

// CallUntilIdle is Call, except that a response still arriving when ctx's
// deadline passes is not cut off: the call goes on while a part of it
// (parts.go) arrives at least every idle. A deadline thus bounds the wait
// for a response to start, whatever its size, and a 512 MiB reply over a
// slow link is not failed half-way.
func (c *Client) CallUntilIdle(ctx context.Context, req Frame, idle time.Duration) (Frame, error) {
	return c.call(ctx, req, idle)
}

func (c *Client) call(ctx context.Context, req Frame, idle time.Duration) (Frame, error) {
	if err := ctx.Err(); err != nil {
		return Frame{}, c.wrap(err)
	}
	if err := c.checkSize(req); err != nil {
		return Frame{}, err
	}
	cc, err := c.conn(ctx)
	if err != nil {
		return Frame{}, err
	}
	type result struct {
		resp Frame
		err  error
	}
	ch := make(chan result, 1)
	id := cc.send(req, func(resp Frame, err error) { ch <- result{resp, err} })
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		for idle > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			wait := idle - time.Since(cc.lastPart(id))
			if wait <= 0 {
				break
			}
			select {
			case r := <-ch:
				return r.resp, r.err
			case <-time.After(wait):
			}
		}
		if cc.take(id) == nil {
			r := <-ch // the response or failure won the race and is on its way
			return r.resp, r.err
		}
		return Frame{}, c.wrap(ctx.Err())
	}
}

// Go sends req and calls done exactly once with the response or an error, as
// Call would return them. done runs on the connection's reader goroutine (or,
// for failures, on whichever goroutine noticed them) and must not block:
// hand slow work to another goroutine. Go itself does not block; if no
// connection is up, it dials in the background. req.Payload must not be
// modified after the call.
func (c *Client) Go(req Frame, done func(resp Frame, err error)) {
	if err := c.checkSize(req); err != nil {
		done(Frame{}, err)
		return
	}
	c.mu.Lock()
	cc := c.cc
	c.mu.Unlock()
	if cc != nil && !cc.broken() {
		cc.send(req, done)
		return
	}
	go func() {
		cc, err := c.conn(context.Background())
		if err != nil {
			done(Frame{}, err)
			return
		}
		cc.send(req, done)
	}()
}

// Close fails every call in flight and every later call with ErrClosed and
// closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	cc := c.cc
	c.cc = nil
	c.mu.Unlock()
	c.cancel()
	if cc != nil {
		cc.fail(ErrClosed)
	}
	return nil
}

// conn returns a healthy connection, dialing if there is none. Concurrent
// callers share one dial; a caller whose ctx ends stops waiting for it.
func (c *Client) conn(ctx context.Context) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, c.closedErr(nil)
	}
	if c.cc != nil && !c.cc.broken() {
		cc := c.cc
		c.mu.Unlock()
		return cc, nil
	}
	c.cc = nil
	d := c.dialing
	if d == nil {
		d = &dialCall{done: make(chan struct{})}
		c.dialing = d
		go c.dial(d)
	}
	c.mu.Unlock()
	select {
	case <-d.done:
		return d.cc, d.err
	case <-ctx.Done():
		return nil, c.wrap(ctx.Err())
	}
}

// dial makes one connection attempt and publishes the result to d.
func (c *Client) dial(d *dialCall) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.dialTimeout)
	conn, err := c.opts.dial(ctx, c.addr)
	if err == nil && c.opts.guard != nil {
		conn, err = c.opts.guard.Dial(ctx, conn)
	}
	cancel()
	c.mu.Lock()
	c.dialing = nil
	switch {
	case err != nil:
		d.err = fmt.Errorf("transport: dial %s: %w: %w", c.addr, ErrNotSent, err)
	case c.closed:
		conn.Close()
		d.err = c.closedErr(nil)
	default:
		d.cc = newClientConn(c, conn)
		c.cc = d.cc
	}
	c.mu.Unlock()
	close(d.done)
}

// checkSize refuses a request the peer would refuse, before sending it.
func (c *Client) checkSize(req Frame) error {
	size := req.Size()
	if size <= c.opts.maxPayload {
		return nil
	}
	return c.wrap(fmt.Errorf("%w: payload of %d bytes exceeds the limit of %d",
		ErrFrame, size, c.opts.maxPayload))
}

// forget drops cc as the current connection once it has failed.
func (c *Client) forget(cc *clientConn) {
	c.mu.Lock()
	if c.cc == cc {
		c.cc = nil
	}
	c.mu.Unlock()
}

func (c *Client) wrap(err error) error {
	return fmt.Errorf("transport: call to %s: %w", c.addr, err)
}

// closedErr is the error of calls on a closed client or broken connection:
// it matches ErrClosed and the cause, if there is one besides ErrClosed.
func (c *Client) closedErr(cause error) error {
	if cause == nil || errors.Is(cause, ErrClosed) {
		return fmt.Errorf("%w (peer %s)", ErrClosed, c.addr)
	}
	return fmt.Errorf("%w (peer %s): %w", ErrClosed, c.addr, cause)
}

// clientConn is one connection of a Client with its reader and writer
// goroutines and the callbacks of the requests in flight on it.
type clientConn struct {
	c    *Client
	conn net.Conn
	q    *sendQueue

	mu      sync.Mutex
	pending map[uint64]func(Frame, error)
	parts   map[uint64]time.Time // when the last part of a response arriving in parts came, by id
	err     error                // set once the connection failed
}

func newClientConn(c *Client, conn net.Conn) *clientConn {
	cc := &clientConn{
		c:       c,
		conn:    conn,
		q:       newSendQueue(TagFrames),
		pending: make(map[uint64]func(Frame, error)),
	}
	go cc.q.run(conn, cc.fail)
	go cc.readLoop()
	return cc
}

// send registers done under a fresh ID, queues req and returns the ID, or 0
// if it failed at once (done has then been called). Whoever removes done
// from pending (the reader, a failure, a cancelled Call) is the one that
// calls it, which makes it run exactly once.
func (cc *clientConn) send(req Frame, done func(Frame, error)) uint64 {
	req.ID = cc.c.nextID.Add(1)
	req.Flags &= knownFlags &^ (FlagResponse | FlagPart)
	cc.mu.Lock()
	if cc.err != nil {
		err := cc.err
		cc.mu.Unlock()
		done(Frame{}, err)
		return 0
	}
	cc.pending[req.ID] = done
	cc.mu.Unlock()
	// A push can fail only after fail closed the queue, and fail has then
	// taken done from pending and will call it.
	_ = cc.q.push(req)
	return req.ID
}

// take removes and returns the callback for id, or nil if it is gone.
func (cc *clientConn) take(id uint64) func(Frame, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	done := cc.pending[id]
	delete(cc.pending, id)
	delete(cc.parts, id)
	return done
}

func (cc *clientConn) broken() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err != nil
}

func (cc *clientConn) readLoop() {
	r := newFrameReader(bufio.NewReaderSize(cc.conn, 64<<10), cc.c.opts.maxPayload)
	r.onPart = cc.partArrived
	for {
		f, err := r.next()
		if err != nil {
			cc.fail(err)
			return
		}
		if f.Flags&FlagResponse == 0 {
			cc.fail(fmt.Errorf("%w: request frame (type %d) from a server", ErrFrame, f.Type))
			return
		}
		done := cc.take(f.ID)
		if done == nil {
			continue // the caller gave up on it
		}
		if f.Flags&FlagError != 0 {
			done(f, &RemoteError{Msg: string(f.Payload)})
		} else {
			done(f, nil)
		}
	}
}

// partArrived notes that a part of the response to call id came.
func (cc *clientConn) partArrived(id uint64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.pending[id]; !ok {
		return // the caller gave up on it
	}
	if cc.parts == nil {
		cc.parts = map[uint64]time.Time{}
	}
	cc.parts[id] = time.Now()
}

// lastPart is when the last part of the response to call id came (the
// zero time if none has).
func (cc *clientConn) lastPart(id uint64) time.Time {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.parts[id]
}

// fail breaks the connection once: it closes it, stops the writer and fails
// every pending call with an error that matches ErrClosed and the cause.
func (cc *clientConn) fail(cause error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	err := cc.c.closedErr(cause)
	cc.err = err
	pending := cc.pending
	cc.pending = nil
	cc.mu.Unlock()

	cc.q.close(err)
	cc.conn.Close()
	cc.c.forget(cc)
	for _, done := range pending {
		done(Frame{}, err)
	}
}
