package stripe

// This file is the fault hook of corruption tests and drills (DEBUG FLIP,
// allowed with --enable-debug-command): it changes stored bytes in place,
// behind every checksum's back, as a flipped memory bit would.

// FlipKey flips the last byte of every copy of key's object this node
// stores in a packed scheme — in its data chunks and kept batch chunks as
// the key's coordinator, in its copies of open chunks and hybrid replicas
// as a holder, in the batch pieces it holds — and returns how many it
// changed. Checksums are left as they were.
func (eng *Engine) FlipKey(key []byte) int {
	flipped := 0
	for _, s := range eng.all() {
		s.mu.Lock()
		flipped += s.flipData(key)
		flipped += s.flipImages(key)
		s.mu.Unlock()
	}
	return flipped + eng.pieces.flip(key)
}

// flipData flips key's object in this node's chunks and kept batch
// chunks. The caller holds s.mu.
func (s *schemeState) flipData(key []byte) int {
	flipped := 0
	if loc, ok := s.data.index.Get(key); ok {
		if c := s.data.chunkAt(loc); c != nil {
			if _, n, err := c.chunk.At(int(loc.Offset)); err == nil {
				c.chunk.data[int(loc.Offset)+n-1] ^= 0xFF
				flipped++
			}
		}
	}
	if s.batch != nil {
		if loc, ok := s.batch.data.Locate(key); ok {
			if e, err := s.batch.data.entry(loc); err == nil && e.local {
				s.batch.data.stripes[loc.Slot].kept[loc.Chunk][loc.Offset+e.size-1] ^= 0xFF
				flipped++
			}
		}
	}
	return flipped
}

// flipImages flips key's object in this holder's copies of chunks (open
// chunks' copies, a hybrid replica's sealed ones). The caller holds s.mu.
func (s *schemeState) flipImages(key []byte) int {
	if s.parity == nil {
		return 0
	}
	flipped := 0
	for _, st := range s.parity.stripes {
		for i := range st.pos {
			flipped += flipIn(st.pos[i].image, key)
		}
	}
	return flipped
}

// flip flips key's objects in the batch pieces held here.
func (h *batchPieces) flip(key []byte) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	flipped := 0
	for _, sp := range h.byShard {
		for _, pieces := range sp.bySerial {
			for _, hp := range pieces {
				flipped += flipIn(hp.p.bytes, key)
			}
		}
	}
	return flipped
}

// flipIn flips the last byte of key's objects in chunk bytes b.
func flipIn(b, key []byte) int {
	flipped := 0
	_ = Scan(b, func(off int, o Object) bool {
		if string(o.Key) == string(key) {
			b[off+o.EncodedLen()-1] ^= 0xFF
			flipped++
		}
		return true
	})
	return flipped
}

// flipParity flips byte offset of every parity chunk this node holds, in
// every packed scheme, and returns how many it changed.
func (eng *Engine) flipParity(offset int) int {
	flipped := 0
	for _, s := range eng.all() {
		s.mu.Lock()
		if s.parity != nil {
			for _, st := range s.parity.stripes {
				if offset < len(st.parity) {
					st.parity[offset] ^= 0xFF
					flipped++
				}
			}
		}
		s.mu.Unlock()
	}
	return flipped
}
