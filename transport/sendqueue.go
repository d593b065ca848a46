package transport

import (
	"net"
	"slices"
	"sync"
)

// Frames with payloads up to inlineMax are copied into the batch buffer;
// larger payloads are written from the caller's slice (writev on TCP), so a
// 512 MiB value is sent without a copy.
const inlineMax = 64 << 10

// Frames with payloads up to lockedCRCMax are checksummed under the queue's
// lock, larger ones before it.
const lockedCRCMax = 1 << 10

// A batch buffer that grew beyond keepMax is dropped after its write rather
// than kept for reuse, so one burst does not pin memory for the connection's
// life.
const keepMax = 4 << 20

// sendQueue is the write side of one connection. Any goroutine pushes frames;
// one writer goroutine (run) takes everything queued so far and writes it
// with one Write call (one writev if large payloads are in the batch). While
// it writes, new frames gather in the other batch: that is the batching, and
// it needs no timer because a busy connection always has a write in progress.
// A message over PartSize goes as a stream of parts (parts.go): each write
// carries the frames queued since the last one and the next part of one
// stream, in turn, so small frames never wait behind a large message.
type sendQueue struct {
	mu      sync.Mutex
	cur     *batch    // where push appends
	spare   *batch    // the writer's batch, returned after each write
	streams []*stream // messages being sent in parts
	turn    int       // the stream whose part goes next
	err     error     // set once closed; push fails with it
	wake    chan struct{}
	closed  chan struct{}
}

// batch is a run of encoded frames: segs in order, then arena[sealed:].
type batch struct {
	arena  []byte      // headers and small payloads, back to back
	sealed int         // arena[:sealed] is already referenced by segs
	segs   net.Buffers // ready segments: arena slices and large payloads
}

func newSendQueue(prefix ...byte) *sendQueue {
	q := &sendQueue{
		cur:    &batch{arena: append([]byte(nil), prefix...)},
		spare:  &batch{},
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	if len(prefix) > 0 {
		q.wake <- struct{}{}
	}
	return q
}

// push queues f for writing. It fails only once the queue is closed.
func (q *sendQueue) push(f Frame) error {
	if f.Size() > PartSize {
		return q.pushStream(splitParts(f))
	}
	// The checksum of a larger payload is computed before taking the lock,
	// so that senders run it in parallel; for a small one that would cost
	// more (a header allocation) than it saves.
	var hdr []byte
	if len(f.Payload) > lockedCRCMax || len(f.Tail) > 0 {
		hdr = appendHeader(make([]byte, 0, HeaderSize), f)
	}
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return err
	}
	if hdr == nil {
		q.cur.arena = AppendFrame(q.cur.arena, f)
	} else {
		q.cur.add(hdr, f.Payload)
		q.cur.add(nil, f.Tail...)
	}
	q.mu.Unlock()
	q.poke()
	return nil
}

// pushStream queues a message to be sent in parts.
func (q *sendQueue) pushStream(s *stream) error {
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return err
	}
	q.streams = append(q.streams, s)
	q.mu.Unlock()
	q.poke()
	return nil
}

// poke makes the writer look at the queue.
func (q *sendQueue) poke() {
	select {
	case q.wake <- struct{}{}:
	default: // the writer is already due to look
	}
}

// close stops the writer and makes push fail with err; queued frames and
// streams are dropped. Only the first call has an effect.
func (q *sendQueue) close(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
		q.streams = nil
		close(q.closed)
	}
}

// run writes batches to conn until the queue is closed or a write fails; it
// reports a failure to fail. While streams are queued it writes without
// waiting to be woken, one part per write.
func (q *sendQueue) run(conn net.Conn, fail func(error)) {
	for {
		select {
		case <-q.wake:
		case <-q.closed:
			return
		}
		for more := true; more; {
			q.mu.Lock()
			b := q.cur
			q.cur, q.spare = q.spare, nil
			if p, ok := q.nextPart(); ok {
				b.add(p.head, p.data...)
			}
			q.mu.Unlock()
			if err := b.writeTo(conn); err != nil {
				fail(err)
				return
			}
			b.reset()
			q.mu.Lock()
			q.spare = b
			more = len(q.streams) > 0 && q.err == nil
			q.mu.Unlock()
		}
	}
}

// nextPart takes the next part to send, from each stream in turn; the
// caller holds q.mu.
func (q *sendQueue) nextPart() (part, bool) {
	if len(q.streams) == 0 {
		return part{}, false
	}
	q.turn %= len(q.streams)
	s := q.streams[q.turn]
	p := s.parts[s.next]
	s.parts[s.next] = part{} // the caller's payload is not kept for longer than needed
	s.next++
	if s.next == len(s.parts) {
		q.streams = slices.Delete(q.streams, q.turn, q.turn+1)
	} else {
		q.turn++
	}
	return p, true
}

// add appends hdr and then segs, the payload: small segments are copied
// into the arena, large ones are referenced.
func (b *batch) add(hdr []byte, segs ...[]byte) {
	b.arena = append(b.arena, hdr...)
	for _, payload := range segs {
		if len(payload) <= inlineMax {
			b.arena = append(b.arena, payload...)
			continue
		}
		// Appending to arena later may move it, but the slice kept here
		// still points at the old array, whose bytes never change.
		b.segs = append(b.segs, b.arena[b.sealed:], payload)
		b.sealed = len(b.arena)
	}
}

func (b *batch) writeTo(conn net.Conn) error {
	tail := b.arena[b.sealed:]
	if len(b.segs) == 0 {
		if len(tail) == 0 {
			return nil
		}
		_, err := conn.Write(tail)
		return err
	}
	if len(tail) > 0 {
		b.segs = append(b.segs, tail)
	}
	bufs := b.segs // WriteTo consumes its receiver
	_, err := bufs.WriteTo(conn)
	return err
}

func (b *batch) reset() {
	clear(b.segs) // drop references to callers' payloads
	b.segs = b.segs[:0]
	b.arena = b.arena[:0]
	b.sealed = 0
	if cap(b.arena) > keepMax {
		b.arena = nil
	}
}
