package stripe

import (
	"strconv"

	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
)

// Usage is a packed scheme's memory on one node (or summed over nodes).
type Usage struct {
	Chunks   int64 `json:"chunks"`   // data chunks, whole
	Parity   int64 `json:"parity"`   // parity chunks
	Buffered int64 `json:"buffered"` // parity holders' copies of open chunks
	// Copies is a hybrid scheme's replica holders' copies of sealed
	// chunks (their copies of open ones are Buffered).
	Copies  int64 `json:"copies,omitempty"`
	Backups int64 `json:"backups"` // parity holders' backups of updates not known stable
	// Manifests is the first parity holders' key tags of sealed chunks.
	Manifests int64 `json:"manifests"`
	Index     int64 `json:"index"`
	// Heads is a stripe@batch coordinator's heads of its objects kept on
	// other nodes (key and metadata, BatchData).
	Heads   int64 `json:"heads,omitempty"`
	Objects int64 `json:"objects"` // encoded objects, live or in flight
	Garbage int64 `json:"garbage"` // dead objects' bytes not yet reclaimed
	// BatchData is the data chunk bytes of batch stripes a coordinator
	// wrote, garbage included, and BatchGarbage the part no key uses
	// (decision 0009's garbage ratio).
	BatchData    int64 `json:"batch_data,omitempty"`
	BatchGarbage int64 `json:"batch_garbage,omitempty"`
	// BatchingNodes counts the nodes whose writes of the scheme go in
	// batches now: every node under @batch, those @auto chose it on.
	BatchingNodes int64 `json:"batching_nodes,omitempty"`
}

// addBatch adds a batching scheme's coordinator figures b and its
// pieces held here for coordinators (itself included): chunks kept by
// the coordinator and data pieces are data chunks, except that under
// hybrid the spread data pieces are the copies (the coordinator keeps
// the data); parity pieces are parity, their manifests manifests.
func (u *Usage) addBatch(spec scheme.Spec, b BatchStats, held heldBytes) {
	u.Chunks += int64(b.KeptBytes)
	if spec.Kind == scheme.Hybrid {
		u.Copies += int64(held.data)
	} else {
		u.Chunks += int64(held.data)
	}
	u.Parity += int64(held.parity)
	u.Manifests += int64(held.manifests)
	u.Index += int64(b.IndexBytes)
	u.Heads += int64(b.HeadBytes)
	u.Objects += int64(b.LiveBytes)
	u.BatchData += int64(b.DataBytes)
	u.BatchGarbage += int64(b.DataBytes - b.LiveBytes)
	u.Garbage += int64(b.DataBytes - b.LiveBytes)
}

// Add adds o to u.
func (u *Usage) Add(o *Usage) {
	u.Chunks += o.Chunks
	u.Parity += o.Parity
	u.Buffered += o.Buffered
	u.Copies += o.Copies
	u.Backups += o.Backups
	u.Manifests += o.Manifests
	u.Index += o.Index
	u.Heads += o.Heads
	u.Objects += o.Objects
	u.Garbage += o.Garbage
	u.BatchData += o.BatchData
	u.BatchGarbage += o.BatchGarbage
	u.BatchingNodes += o.BatchingNodes
}

// Stored is the bytes u keeps in memory: chunks, parity, copies,
// backups, manifests and the index.
func (u *Usage) Stored() int64 {
	return u.Chunks + u.Parity + u.Buffered + u.Copies + u.Backups + u.Manifests + u.Index + u.Heads
}

// SchemeUsage is one stripe scheme's usage on this node: its memory, and
// its keys and their logical bytes.
type SchemeUsage struct {
	ID            uint16
	Keys, Logical int64
	Usage         Usage
}

// Usage reports every stripe scheme's usage on this node.
func (eng *Engine) Usage() []SchemeUsage {
	var out []SchemeUsage
	for _, s := range eng.all() {
		u, keys, logical := s.usage(&eng.pieces)
		out = append(out, SchemeUsage{ID: s.id, Keys: keys, Logical: logical, Usage: u})
	}
	return out
}

// Info is SCHEME.INFO's breakdown of a packed scheme's stored bytes
// (decision 0003) for keys keys of logical bytes in all whose usage is u
// (nil: none), with the overhead MemEC §3.3's formula predicts for
// objects of the measured sizes:
//
//	[n(K+V+M)/k + R/O + n(I+R/O)(K+V+M)/(kC)] / (K+V)
//
// where K+V is the mean key and value bytes, K+V+M the mean encoded object,
// R/O the index bytes per key, I+R/O = 16 bytes per chunk and C the chunk
// size (MemEC divides by K+V+M; we divide by the logical bytes, as the
// measured overhead does, so that the two compare). n/k is the chunk
// bytes a list stores per data chunk byte, spec.Overhead(): (k+m)/k for
// stripe, (2k+m−1)/k for hybrid (decision 0008).
func Info(spec scheme.Spec, keys, logical int64, u *Usage) []kind.Detail {
	if u == nil {
		u = &Usage{}
	}
	formula := spec.Overhead()
	if keys > 0 && logical > 0 {
		nk, c := spec.Overhead(), float64(spec.ChunkSize())
		obj, mean, index := float64(u.Objects)/float64(keys), float64(logical)/float64(keys), float64(u.Index)/float64(keys)
		formula = (nk*obj + index + nk*16*obj/c) / mean
	}
	return append([]kind.Detail{
		{Name: "chunk_size", Value: int64(spec.ChunkSize())},
		{Name: "data_chunk_bytes", Value: u.Chunks},
		{Name: "object_bytes", Value: u.Objects},
		{Name: "garbage_bytes", Value: u.Garbage},
		{Name: "parity_bytes", Value: u.Parity},
		{Name: "buffered_bytes", Value: u.Buffered},
		{Name: "backup_bytes", Value: u.Backups},
		{Name: "manifest_bytes", Value: u.Manifests},
		{Name: "index_bytes", Value: u.Index},
		{Name: "memec_overhead", Value: strconv.FormatFloat(formula, 'f', 3, 64)},
	}, batchInfo(spec, u)...)
}

// batchInfo is SCHEME.INFO's part on the write mode (decision 0009): the
// mode, and for a batching scheme its bound, its batch stripes' data and
// garbage ratio (the GC's measure), the coordinators' object heads, and
// how many nodes write in batches now.
func batchInfo(spec scheme.Spec, u *Usage) []kind.Detail {
	out := []kind.Detail{{Name: "write_mode", Value: spec.Mode.String()}}
	if spec.Mode == scheme.InPlace {
		return out
	}
	ratio := 0.0
	if u.BatchData > 0 {
		ratio = float64(u.BatchGarbage) / float64(u.BatchData)
	}
	return append(out,
		kind.Detail{Name: "latency_bound_us", Value: spec.LatencyBound().Microseconds()},
		kind.Detail{Name: "batch_data_bytes", Value: u.BatchData},
		kind.Detail{Name: "garbage_ratio", Value: strconv.FormatFloat(ratio, 'f', 3, 64)},
		kind.Detail{Name: "head_bytes", Value: u.Heads},
		kind.Detail{Name: "batching_nodes", Value: u.BatchingNodes},
	)
}
