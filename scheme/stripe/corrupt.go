package stripe

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// This file is the chunk layer's side of corruption (DESIGN.md §4
// "Corruption", KVMD §3.2): reads that check every object they return
// against its checksum, and the restore of a chunk's bytes from a copy
// its stripe rebuilt (repair.go).

// CorruptError says that a read found objects failing their checksums,
// or an index entry at bytes that no longer parse, in the chunks it
// names: they must be restored from their stripes before the read can be
// answered.
type CorruptError struct {
	Chunks []ChunkID
}

func (e *CorruptError) Error() string {
	ids := make([]string, len(e.Chunks))
	for i, id := range e.Chunks {
		ids[i] = id.String()
	}
	return fmt.Sprintf("stripe: chunk %s fails its checksums", strings.Join(ids, ", "))
}

// Is makes a CorruptError match ErrChecksum.
func (e *CorruptError) Is(target error) bool { return target == ErrChecksum }

// ErrChanged says a chunk changed while its repair was being read: the
// restore is not applied, and the repair reads again.
var ErrChanged = errors.New("stripe: the chunk changed during its repair")

// AtChecked is At that also checks the object's checksum.
func (c *Chunk) AtChecked(offset int) (Object, int, error) {
	if offset < 0 || offset >= c.fill {
		return Object{}, 0, fmt.Errorf("stripe: offset %d outside the chunk's %d bytes: %w", offset, c.fill, ErrCorrupt)
	}
	return ParseChecked(c.data[offset:c.fill])
}

// CheckObjects checks every object in chunk bytes b against its
// checksum: nil if b parses from start to end and every object passes.
func CheckObjects(b []byte) error {
	for p := 0; p < len(b); {
		if b[p] == 0 {
			p++
			continue
		}
		_, n, err := ParseChecked(b[p:])
		if err != nil {
			return fmt.Errorf("stripe: at offset %d: %w", p, err)
		}
		p += n
	}
	return nil
}

// GetChecked is Get with every byte it returns checked: key's current
// object, each fragment of it checked against its checksum. A corrupt
// object fails with a *CorruptError naming its chunks, and so does a
// miss where an index entry with key's tag points at bytes that fail
// their check (key's own entry, if the damage hit its key).
func (d *Data) GetChecked(key []byte) (Object, bool, error) {
	loc, ok := d.index.Get(key)
	if !ok {
		return Object{}, false, d.suspects(key)
	}
	if c := d.chunkAt(loc); c != nil && len(d.frags[string(key)]) == 0 {
		o, _, err := c.chunk.AtChecked(int(loc.Offset)) // the common case: one object, parsed once
		if err != nil {
			return Object{}, true, &CorruptError{Chunks: []ChunkID{c.id}}
		}
		return o, true, nil
	}
	if bad := d.corruptAt(key, loc); len(bad) > 0 {
		return Object{}, true, &CorruptError{Chunks: bad}
	}
	o, err := d.object(key, loc)
	if err != nil {
		return Object{}, true, err
	}
	return o, true, nil
}

// corruptAt lists the chunks of key's object at loc, or of its
// fragments, whose bytes fail their checks.
func (d *Data) corruptAt(key []byte, loc Loc) []ChunkID {
	locs := d.frags[string(key)]
	if len(locs) == 0 {
		locs = []Loc{loc}
	}
	return d.failing(locs)
}

// suspects is a miss's check: nil unless an entry with key's tag points
// at an object failing its check, whose damaged key may be key.
func (d *Data) suspects(key []byte) error {
	if bad := d.failing(d.index.Suspects(key)); len(bad) > 0 {
		return &CorruptError{Chunks: bad}
	}
	return nil
}

// failing lists, once each, the chunks in which an object at one of locs
// fails its check (a loc in no chunk is the caller's read's to report).
func (d *Data) failing(locs []Loc) []ChunkID {
	var bad []ChunkID
	for _, l := range locs {
		c := d.chunkAt(l)
		if c == nil {
			continue
		}
		if _, _, err := c.chunk.AtChecked(int(l.Offset)); err != nil && !slices.Contains(bad, c.id) {
			bad = append(bad, c.id)
		}
	}
	return bad
}

// chunkAt is the chunk of loc, or nil.
func (d *Data) chunkAt(loc Loc) *dataChunk {
	if int(loc.Chunk) >= len(d.chunks) {
		return nil
	}
	return d.chunks[loc.Chunk]
}

// CheckChunk checks the objects of chunk id that the index or the
// fragments table names: the scrub's check of one chunk. ok is false if
// the store does not hold the chunk.
func (d *Data) CheckChunk(id ChunkID) (corrupt, ok bool) {
	num, ok := d.byID[id]
	if !ok {
		return false, false
	}
	c := d.chunks[num]
	return CheckObjects(c.chunk.data[:c.chunk.fill]) != nil, true
}

// Restore replaces chunk id's bytes with b, a copy its stripe rebuilt
// (from a holder's copy, a replica, or a decode) as of seq. The copy
// must pass every object's check, and the chunk must still be at seq
// with no in-place update staged in it, else ErrChanged and nothing
// changes. It returns whether any byte differed.
func (d *Data) Restore(id ChunkID, seq uint32, b []byte) (bool, error) {
	num, ok := d.byID[id]
	if !ok {
		return false, fmt.Errorf("%w: %s", ErrNoObject, id)
	}
	c := d.chunks[num]
	if c.seq != seq || len(b) != c.chunk.Size() || d.stagedIn(num) {
		return false, fmt.Errorf("%w: %s at seq %d, copy at %d", ErrChanged, id, c.seq, seq)
	}
	if err := CheckObjects(b); err != nil {
		return false, fmt.Errorf("stripe: the copy of %s read back: %w", id, err)
	}
	if slices.Equal(c.chunk.data, b) {
		return false, nil
	}
	copy(c.chunk.data, b)
	d.index.Reseat(num)
	return true, nil
}

// stagedIn says whether an in-place update is staged in chunk number
// num: its holders are then ahead of the chunk by the update's delta.
func (d *Data) stagedIn(num uint32) bool {
	for loc := range d.inPlace {
		if loc.Chunk == num {
			return true
		}
	}
	return false
}

// detach keeps loc, an object being removed whose bytes fail their check,
// for RemoveDetached: zeroing it now would send parity its damage as the
// removal's delta. It stays counted live, so its chunk is not freed.
func (d *Data) detach(loc Loc) {
	if d.detached == nil {
		d.detached = map[uint32][]Loc{}
	}
	if !slices.Contains(d.detached[loc.Chunk], loc) {
		d.detached[loc.Chunk] = append(d.detached[loc.Chunk], loc)
	}
}

// Detached lists the chunks holding detached objects.
func (d *Data) Detached() []ChunkID {
	var ids []ChunkID
	for num := range d.detached {
		if c := d.chunks[num]; c != nil {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// RemoveDetached zeroes chunk id's detached objects that pass their checks
// now (its chunk restored) and returns the updates, and whether any is
// left.
func (d *Data) RemoveDetached(id ChunkID) ([]Update, bool) {
	num, ok := d.byID[id]
	if !ok {
		return nil, false
	}
	c := d.chunks[num]
	var ups []Update
	var left []Loc
	for _, loc := range d.detached[num] {
		if _, _, err := c.chunk.AtChecked(int(loc.Offset)); err != nil {
			left = append(left, loc) // still damaged: its chunk's repair failed
			continue
		}
		ch, err := c.chunk.Delete(int(loc.Offset))
		if err != nil {
			left = append(left, loc)
			continue
		}
		ups = append(ups, d.record(c, Update{Kind: Delta, Offset: ch.Offset, Bytes: ch.Delta}))
	}
	if len(left) == 0 {
		delete(d.detached, num)
	} else {
		d.detached[num] = left
	}
	return append(ups, d.settle(c)...), len(left) > 0
}
