package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Large messages travel in parts (decision 0006). A message whose payload
// is over PartSize is cut into frames of at most PartSize payload bytes,
// each flagged FlagPart and carrying the message's type, epoch, id and
// flags. A part's payload starts with partPrefix bytes: the message's
// payload length (u32) and the part's offset in it (u32). The writer sends
// one part of each such message per write, after every small frame queued
// meanwhile, so a 512 MiB value never holds a connection for longer than
// one part takes to send; the reader assembles the parts, in order, into
// one buffer allocated at the first, and hands on the whole message when
// the last arrives. Messages queued after a large one may thus be
// delivered before it.

// PartSize is the most payload bytes a frame of a message sent in parts
// carries, beyond the part prefix: 1 MiB, about a millisecond of a
// loopback or 10 Gb/s link, which bounds how long a small frame waits
// behind a large message, while 512 parts per 512 MiB value keep the cost
// per part (a header, a write) negligible.
const PartSize = 1 << 20

// partPrefix is the size of a part's prefix: message length, part offset.
const partPrefix = 8

// stream is a message being sent in parts: each part's header and prefix,
// checksummed in advance, and its bytes as slices of the caller's payload.
type stream struct {
	parts []part
	next  int
}

// part is one frame of a stream: head is its header and prefix, data the
// slices of the message's payload it carries.
type part struct {
	head []byte
	data [][]byte
}

// splitParts cuts f into parts and computes every part's checksums, on the
// caller's goroutine: senders checksum their messages in parallel, and the
// writer only writes.
func splitParts(f Frame) *stream {
	total := f.Size()
	count := (total + PartSize - 1) / PartSize
	heads := make([]byte, 0, count*(HeaderSize+partPrefix))
	segs := slices.Clone(f.segments())
	pf := f
	pf.Flags |= FlagPart
	s := &stream{parts: make([]part, 0, count)}
	for off := 0; off < total; off += PartSize {
		var data [][]byte
		data, segs = cut(segs, min(PartSize, total-off))
		var prefix [partPrefix]byte
		binary.BigEndian.PutUint32(prefix[:4], uint32(total))
		binary.BigEndian.PutUint32(prefix[4:], uint32(off))
		start := len(heads)
		heads = appendHeaderOf(heads, pf, append([][]byte{prefix[:]}, data...)...)
		heads = append(heads, prefix[:]...)
		s.parts = append(s.parts, part{head: heads[start:len(heads):len(heads)], data: data})
	}
	return s
}

// cut takes the first n bytes of segs, as slices of them, and returns
// them with what is left.
func cut(segs [][]byte, n int) (head, rest [][]byte) {
	for n > 0 && len(segs) > 0 {
		s := segs[0]
		take := min(n, len(s))
		if take > 0 {
			head = append(head, s[:take:take])
		}
		n -= take
		if take == len(s) {
			segs = segs[1:]
		} else {
			segs[0] = s[take:]
		}
	}
	return head, segs
}

// frameReader reads whole messages from a connection: frames as they are,
// and the parts of large messages assembled.
type frameReader struct {
	br         *bufio.Reader
	maxPayload int
	partial    map[uint64]*assembly // messages whose first part came, by id
	// onPart, if set, is told of every part but a message's last.
	onPart func(id uint64)
}

// assembly is a message being received in parts.
type assembly struct {
	f    Frame // type, flags (with FlagPart), epoch and id
	buf  []byte
	have int
}

func newFrameReader(br *bufio.Reader, maxPayload int) *frameReader {
	return &frameReader{br: br, maxPayload: maxPayload, partial: map[uint64]*assembly{}}
}

// next returns the next whole message, with errors as ReadFrame's. Parts
// that break the rules (out of order, a length over the limit or unlike
// the first part's) are ErrFrame.
func (r *frameReader) next() (Frame, error) {
	for {
		f, size, hdr, err := readHeader(r.br, r.maxPayload)
		if err != nil {
			return Frame{}, err
		}
		if f.Flags&FlagPart == 0 {
			return readBody(r.br, f, size, &hdr)
		}
		msg, whole, err := r.readPart(f, size, &hdr)
		if err != nil || whole {
			return msg, err
		}
	}
}

// readPart reads one part into its message's buffer and returns the
// message once it is whole.
func (r *frameReader) readPart(f Frame, size int, hdr *[HeaderSize]byte) (Frame, bool, error) {
	if size <= partPrefix {
		return Frame{}, false, fmt.Errorf("%w: a part of %d bytes", ErrFrame, size)
	}
	var prefix [partPrefix]byte
	if _, err := io.ReadFull(r.br, prefix[:]); err != nil {
		return Frame{}, false, unexpectedEOF(err)
	}
	total := int(binary.BigEndian.Uint32(prefix[:4]))
	off := int(binary.BigEndian.Uint32(prefix[4:]))
	a, err := r.assembly(f, total, off, size-partPrefix)
	if err != nil {
		return Frame{}, false, err
	}
	dst := a.buf[off : off+size-partPrefix]
	if _, err := io.ReadFull(r.br, dst); err != nil {
		return Frame{}, false, unexpectedEOF(err)
	}
	hcrc := binary.BigEndian.Uint32(hdr[offHCRC:])
	want := binary.BigEndian.Uint32(hdr[offFCRC:])
	if got := crc32.Update(crc32.Update(hcrc, castagnoli, prefix[:]), castagnoli, dst); got != want {
		return Frame{}, false, fmt.Errorf("%w: frame crc %08x, want %08x", ErrChecksum, got, want)
	}
	a.have += len(dst)
	if a.have < total {
		if r.onPart != nil {
			r.onPart(f.ID)
		}
		return Frame{}, false, nil
	}
	delete(r.partial, f.ID)
	msg := a.f
	msg.Flags &^= FlagPart
	msg.Payload = a.buf
	return msg, true, nil
}

// assembly returns the message a part of n bytes at off belongs to,
// starting one at the first part, after checking the part against it.
func (r *frameReader) assembly(f Frame, total, off, n int) (*assembly, error) {
	a := r.partial[f.ID]
	if a == nil {
		if off != 0 || total > payloadLimit(r.maxPayload) {
			return nil, fmt.Errorf("%w: a message of %d bytes starting at %d (limit %d)", ErrFrame, total, off, payloadLimit(r.maxPayload))
		}
		a = &assembly{f: f, buf: make([]byte, total)}
		r.partial[f.ID] = a
	}
	switch {
	case a.f.Type != f.Type || a.f.Flags != f.Flags || a.f.Epoch != f.Epoch || len(a.buf) != total:
		return nil, fmt.Errorf("%w: a part of message %d unlike its first", ErrFrame, f.ID)
	case off != a.have || off+n > total:
		return nil, fmt.Errorf("%w: a part of message %d at %d+%d, %d of %d received", ErrFrame, f.ID, off, n, a.have, total)
	}
	return a, nil
}
