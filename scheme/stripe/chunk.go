package stripe

import (
	"errors"
	"fmt"

	"github.com/memgest/memgest/scheme"
)

// Chunk size limits, those of a stripe scheme's spec.
const (
	MinChunkSize     = scheme.MinChunk
	MaxChunkSize     = scheme.MaxChunk
	DefaultChunkSize = scheme.DefaultChunk
)

// Chunk errors.
var (
	ErrFull        = errors.New("stripe: the object does not fit in the chunk")
	ErrSealed      = errors.New("stripe: the chunk is sealed")
	ErrSizeChanged = errors.New("stripe: the new object's size differs; relocate it")
)

// Chunk is one data chunk on its coordinator. Objects are appended until it
// is full, then it is sealed (MemEC §4.3): from then on its bytes are part
// of a stripe's parity, and every change to them is reported as a Change
// for the parity nodes. A chunk is not safe for concurrent use.
type Chunk struct {
	data   []byte
	fill   int // where the next object goes
	live   int // bytes held by live objects
	sealed bool
}

// Change is what one update did to a chunk's bytes: at Offset, Delta is
// the XOR of the old and the new bytes. Applied to parity with
// ec.UpdateParity over the same range, it keeps parity equal to a full
// encode (MemEC §2).
type Change struct {
	Offset int
	Delta  []byte
}

// NewChunk returns an empty chunk of size bytes.
func NewChunk(size int) (*Chunk, error) {
	if err := ValidateChunkSize(size); err != nil {
		return nil, err
	}
	return &Chunk{data: make([]byte, size)}, nil
}

// ValidateChunkSize checks a chunk size.
func ValidateChunkSize(size int) error {
	if size < MinChunkSize || size > MaxChunkSize {
		return fmt.Errorf("stripe: chunk size %d outside [%d, %d]", size, MinChunkSize, MaxChunkSize)
	}
	return nil
}

// Bytes is the chunk's content, all Size() bytes. The caller must not
// modify it.
func (c *Chunk) Bytes() []byte { return c.data }

// Size is the chunk's fixed size.
func (c *Chunk) Size() int { return len(c.data) }

// Free is how many bytes an append can still use; 0 once sealed.
func (c *Chunk) Free() int {
	if c.sealed {
		return 0
	}
	return len(c.data) - c.fill
}

// Live is how many bytes the chunk's live objects take.
func (c *Chunk) Live() int { return c.live }

// Garbage is how many appended bytes no live object holds any more:
// deleted and relocated objects, which compaction reclaims.
func (c *Chunk) Garbage() int { return c.fill - c.live }

// Sealed says whether the chunk is sealed.
func (c *Chunk) Sealed() bool { return c.sealed }

// Seal closes the chunk to appends.
func (c *Chunk) Seal() { c.sealed = true }

// Append writes o at the end of the chunk's objects and returns its offset.
func (c *Chunk) Append(o *Object) (int, error) {
	if c.sealed {
		return 0, ErrSealed
	}
	n := o.EncodedLen()
	if n > len(c.data)-c.fill {
		return 0, ErrFull
	}
	off := c.fill
	o.AppendTo(c.data[off:off])
	c.fill += n
	c.live += n
	return off, nil
}

// At returns the object at offset and its encoded length. Key and Value
// alias the chunk.
func (c *Chunk) At(offset int) (Object, int, error) {
	if offset < 0 || offset >= c.fill {
		return Object{}, 0, fmt.Errorf("stripe: offset %d outside the chunk's %d bytes: %w", offset, c.fill, ErrCorrupt)
	}
	return Parse(c.data[offset:c.fill])
}

// Delete zeroes the object at offset and returns the change.
func (c *Chunk) Delete(offset int) (Change, error) {
	_, n, err := c.At(offset)
	if err != nil {
		return Change{}, err
	}
	delta := append([]byte(nil), c.data[offset:offset+n]...) // old ⊕ 0
	clear(c.data[offset : offset+n])
	c.live -= n
	return Change{Offset: offset, Delta: delta}, nil
}

// Replace overwrites the object at offset with o, which must encode to the
// same length (a new size means relocating: Delete here, Append elsewhere),
// and returns the change.
func (c *Chunk) Replace(offset int, o *Object) (Change, error) {
	_, n, err := c.At(offset)
	if err != nil {
		return Change{}, err
	}
	if o.EncodedLen() != n {
		return Change{}, ErrSizeChanged
	}
	next := o.AppendTo(make([]byte, 0, n))
	delta := make([]byte, n)
	for i := range delta {
		delta[i] = c.data[offset+i] ^ next[i]
	}
	copy(c.data[offset:], next)
	return Change{Offset: offset, Delta: delta}, nil
}

// Objects calls fn for each live object in offset order until fn returns
// false. It reads the bytes alone, so it also lists the objects of a chunk
// rebuilt from parity.
func (c *Chunk) Objects(fn func(offset int, o Object) bool) error {
	return Scan(c.data, fn)
}

// Scan calls fn for each object in chunk bytes b, skipping zero bytes (free
// space and deleted objects), until fn returns false.
func Scan(b []byte, fn func(offset int, o Object) bool) error {
	for p := 0; p < len(b); {
		if b[p] == 0 {
			p++
			continue
		}
		o, n, err := Parse(b[p:])
		if err != nil {
			return fmt.Errorf("stripe: at offset %d: %w", p, err)
		}
		if !fn(p, o) {
			return nil
		}
		p += n
	}
	return nil
}

// Load makes a chunk of bytes b (a copy of a sealed chunk, or one rebuilt
// from parity): sealed, with its live bytes counted by a scan.
func Load(b []byte) (*Chunk, error) {
	if err := ValidateChunkSize(len(b)); err != nil {
		return nil, err
	}
	c := &Chunk{data: b, sealed: true}
	err := c.Objects(func(off int, o Object) bool {
		n := o.EncodedLen()
		c.live += n
		c.fill = off + n
		return true
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
