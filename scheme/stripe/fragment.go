package stripe

import (
	"fmt"
	"slices"
)

// Objects larger than a chunk (MemEC §3.2) are stored as fragments: each
// an object with the key, version and expiry, the fragment flag, its
// offset in the value and the value's total length, appended like any
// object, in value order. The index places the key at its first fragment;
// Data keeps the places of every fragment of such keys in a side table
// (few keys are that large), so that Get assembles the value, and Commit,
// Abort, Delete and compaction act on every fragment. A recovered chunk
// lists fragments as objects; Assemble puts them back together.

// fragmentHeader is the largest header a fragment of o can have: o's
// header with the fragment fields, its value length and offset as large
// as a chunk's size and o's length.
func (d *Data) fragmentHeader(o *Object) int {
	n := fixedHeader + uvarintLen(uint64(len(o.Key))) + uvarintLen(uint64(d.size))
	if o.ExpireAt != 0 {
		n += 8
	}
	return n + 2*uvarintLen(uint64(len(o.Value))) + len(o.Key)
}

// appendFragments appends o, too large for one chunk, as fragments of at
// most a chunk each. On success the first fragment's place stands for the
// object until Commit or Abort.
func (d *Data) appendFragments(o *Object) (Loc, []Update, error) {
	payload := d.size - d.fragmentHeader(o)
	if o.Fragment || payload < d.size/4 {
		return Loc{}, nil, fmt.Errorf("%w: a %d-byte key leaves no room for fragments in chunks of %d", ErrTooLarge, len(o.Key), d.size)
	}
	var locs []Loc
	var ups []Update
	for off := 0; off < len(o.Value); off += payload {
		f := *o
		f.Value = o.Value[off:min(off+payload, len(o.Value))]
		f.Fragment, f.Offset, f.Total = true, off, len(o.Value)
		loc, more, err := d.appendOne(&f)
		if err != nil {
			for _, l := range locs {
				more, _ := d.Abort(l)
				ups = append(ups, more...)
			}
			return Loc{}, ups, err
		}
		locs, ups = append(locs, loc), append(ups, more...)
	}
	if d.staging == nil {
		d.staging = map[Loc][]Loc{}
	}
	d.staging[locs[0]] = locs
	return locs[0], ups, nil
}

// commitFragments makes the fragments staged at locs key's current object
// unless the index holds a newer version, as Commit does for one object.
func (d *Data) commitFragments(key []byte, locs []Loc) (bool, uint64, []Update, error) {
	delete(d.staging, locs[0])
	_, first, err := d.at(locs[0])
	if err != nil {
		return false, 0, nil, err
	}
	var ups []Update
	for _, l := range locs {
		d.chunks[l.Chunk].inflight--
	}
	prevLoc, had := d.index.Get(key)
	var prev Object
	if had {
		if prev, err = d.object(key, prevLoc); err != nil {
			return false, 0, nil, err
		}
		if prev.Version >= first.Version {
			for _, l := range locs {
				more, _ := d.remove(d.chunks[l.Chunk], l)
				ups = append(ups, more...)
			}
			return false, prev.Version, ups, nil
		}
	}
	// The index finds key's entry by reading the key at the entry's
	// place, so it moves before the old object goes.
	if err := d.index.Put(key, locs[0]); err != nil {
		for _, l := range locs {
			d.chunks[l.Chunk].inflight++ // as before: the caller may Abort
		}
		d.staging[locs[0]] = locs
		return false, 0, nil, err
	}
	if had {
		d.keys -= len(prev.Key)
		d.values -= len(prev.Value)
		if ups, err = d.removeCurrent(key, prevLoc); err != nil {
			return true, prev.Version, ups, err
		}
	}
	if d.frags == nil {
		d.frags = map[string][]Loc{}
	}
	d.frags[string(key)] = locs
	d.keys += len(key)
	d.values += first.Total
	for _, l := range locs {
		ups = append(ups, d.settle(d.chunks[l.Chunk])...)
	}
	return true, prev.Version, ups, nil
}

// abortFragments removes fragments that will not be committed.
func (d *Data) abortFragments(locs []Loc) ([]Update, error) {
	delete(d.staging, locs[0])
	var ups []Update
	for _, l := range locs {
		c := d.chunks[l.Chunk]
		c.inflight--
		more, err := d.remove(c, l)
		if err != nil {
			return ups, err
		}
		ups = append(ups, more...)
	}
	return ups, nil
}

// removeCurrent removes key's current object at loc, every fragment of it
// if it is fragmented, and forgets its fragments.
func (d *Data) removeCurrent(key []byte, loc Loc) ([]Update, error) {
	locs, fragmented := d.frags[string(key)]
	if !fragmented {
		return d.remove(d.chunks[loc.Chunk], loc)
	}
	delete(d.frags, string(key))
	var ups []Update
	for _, l := range locs {
		more, err := d.remove(d.chunks[l.Chunk], l)
		if err != nil {
			return ups, err
		}
		ups = append(ups, more...)
	}
	return ups, nil
}

// object returns key's object at loc, its value assembled from its
// fragments if it has them (a new buffer), else aliasing the chunk.
func (d *Data) object(key []byte, loc Loc) (Object, error) {
	_, o, err := d.at(loc)
	if err != nil || !o.Fragment {
		return o, err
	}
	value := make([]byte, o.Total)
	for _, l := range d.frags[string(key)] {
		_, f, err := d.at(l)
		if err != nil {
			return Object{}, err
		}
		copy(value[f.Offset:], f.Value)
	}
	o.Value, o.Fragment, o.Offset, o.Total = value, false, 0, 0
	return o, nil
}

// Fragmented says whether key's current object is stored as fragments:
// Get then returns its value assembled in a buffer of its own, where it
// returns a whole object's in its chunk.
func (d *Data) Fragmented(key []byte) bool { return len(d.frags[string(key)]) > 0 }

// isFragmentOf says whether loc holds a fragment of key's current object.
func (d *Data) isFragmentOf(key []byte, loc Loc) bool {
	return slices.Contains(d.frags[string(key)], loc)
}

// Assemble puts fragmented objects back together: given every object found
// in some chunks (recovered ones), it returns the whole objects among them
// and each fragmented object whose fragments of one version cover its
// value, assembled. Incomplete ones are dropped.
func Assemble(objs []Object) []Object {
	type id struct {
		key     string
		version uint64
	}
	var out []Object
	parts := map[id][]Object{}
	for _, o := range objs {
		if !o.Fragment {
			out = append(out, o)
			continue
		}
		k := id{string(o.Key), o.Version}
		parts[k] = append(parts[k], o)
	}
	for _, fs := range parts {
		slices.SortFunc(fs, func(a, b Object) int { return a.Offset - b.Offset })
		total, next := fs[0].Total, 0
		value := make([]byte, total)
		for _, f := range fs {
			if f.Total != total || f.Offset > next {
				break // a gap: a fragment is missing
			}
			copy(value[f.Offset:], f.Value)
			next = max(next, f.Offset+len(f.Value))
		}
		if next != total {
			continue
		}
		o := fs[0]
		o.Value, o.Fragment, o.Offset, o.Total = value, false, 0, 0
		out = append(out, o)
	}
	return out
}
