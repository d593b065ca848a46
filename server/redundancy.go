package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/split"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
)

// errPieceGone means a split read found a shard already released by a newer
// commit; the read starts again from the primary record.
var errPieceGone = errors.New("server: piece released under a read")

// release names pieces that are no longer needed: replicas up to a version
// (or of exactly one version, for a write that did not commit: its release
// must not touch the committed replicas), or the shards of one split
// version.
type release struct {
	key     []byte
	scheme  uint16
	version uint64
	exact   bool
}

// target is one placement node that holds a piece of a key.
type target struct {
	index int
	node  cluster.Node
}

// pieceTargets lists the nodes holding pieces of key under spec, beyond the
// coordinator's primary record: replicas 1..R−1 for rep, shards 0..k+m−1
// (shard 0 on the coordinator itself) for split.
func pieceTargets(m *cluster.Map, key []byte, spec scheme.Spec) ([]target, error) {
	sh := m.ShardOf(cluster.Slot(key))
	first, count := 0, 0
	switch spec.Kind {
	case scheme.Rep:
		first, count = 1, spec.R-1
	case scheme.Split:
		count = spec.K + spec.M
	}
	if first+count > len(sh.Placement) {
		return nil, fmt.Errorf("server: scheme %s needs %d nodes, the shard has %d", spec, first+count, len(sh.Placement))
	}
	out := make([]target, 0, count)
	for i := first; i < first+count; i++ {
		node, ok := m.Node(sh.Placement[i])
		if !ok {
			return nil, fmt.Errorf("server: placement names unknown node %s", sh.Placement[i])
		}
		out = append(out, target{index: i, node: node})
	}
	return out, nil
}

// sendRedundancy stores op's pieces at version v on their nodes and waits
// for every acknowledgement. It returns what was sent, for release on error.
func (n *Node) sendRedundancy(ctx context.Context, op *writeOp, v uint64) ([]release, error) {
	spec := op.entry.Spec
	if op.del || spec.Kind == scheme.None {
		return nil, nil
	}
	m := n.ctl.Map()
	targets, err := pieceTargets(m, op.key, spec)
	if err != nil {
		return nil, err
	}
	pieces, err := makePieces(op, v, spec, targets)
	if err != nil {
		return nil, err
	}
	sent := []release{{key: op.key, scheme: op.entry.ID, version: v, exact: true}}
	reqs := make([]peerReq, len(pieces))
	for i := range pieces {
		reqs[i] = peerReq{node: targets[i].node, typ: msgPutPiece, payload: pieces[i].encode(nil)}
	}
	if err := n.callAll(ctx, reqs); err != nil {
		return sent, fmt.Errorf("server: write of %q not acknowledged: %w", op.key, err)
	}
	return sent, nil
}

// peerReq is one request of a fan-out to several nodes.
type peerReq struct {
	node    cluster.Node
	typ     uint8
	payload []byte
}

// callAll sends every request at once and waits for all replies, without a
// goroutine or timer per request: the write path of a replicated SET sends
// R−1 of these per command. Requests to this node run locally; a request
// refused for a stale epoch is retried through call, which catches up first.
func (n *Node) callAll(ctx context.Context, reqs []peerReq) error {
	epoch := n.ctl.Map().Epoch
	errs := make([]error, len(reqs))
	done := make(chan int, len(reqs))
	for i, r := range reqs {
		if r.node.ID == n.id {
			_, errs[i] = n.peerHandler(r.typ)(r.payload)
			done <- i
			continue
		}
		frame := transport.Frame{Type: r.typ, Epoch: epoch, Payload: r.payload}
		n.peers.Get(r.node.PeerAddr).Go(frame, func(_ transport.Frame, err error) {
			errs[i] = err
			done <- i
		})
	}
	timeout := time.NewTimer(n.cfg.PeerTimeout)
	defer timeout.Stop()
	for range reqs {
		select {
		case <-done:
		case <-timeout.C:
			return fmt.Errorf("no reply within %s", n.cfg.PeerTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i, err := range errs {
		if _, stale := staleEpoch(err); stale {
			_, errs[i] = n.call(ctx, reqs[i].node, reqs[i].typ, reqs[i].payload)
		} else if err != nil {
			errs[i] = fmt.Errorf("node %s: %w", reqs[i].node.PeerAddr, err)
		}
	}
	return errors.Join(errs...)
}

func makePieces(op *writeOp, v uint64, spec scheme.Spec, targets []target) ([]piece, error) {
	base := piece{Key: op.key, Scheme: op.entry.ID, Version: v, ExpireAt: op.expireAt}
	out := make([]piece, len(targets))
	if spec.Kind == scheme.Rep {
		crc := checksum(op.value)
		for i, t := range targets {
			out[i] = base
			out[i].Index, out[i].CRC, out[i].Data = uint8(t.index), crc, op.value
		}
		return out, nil
	}
	shards, err := split.Encode(op.key, op.value, spec.K, spec.M)
	if err != nil {
		return nil, err
	}
	for i := range targets {
		out[i] = base
		out[i].Versioned = true
		out[i].Index, out[i].CRC, out[i].Data = uint8(i), checksum(shards[i]), shards[i]
	}
	return out, nil
}

// storePiece keeps a piece sent by a coordinator (or by this node to itself).
func (n *Node) storePiece(p piece) error {
	if checksum(p.Data) != p.CRC {
		return errors.New("server: piece checksum mismatch in transit")
	}
	ref := pieceRef{Key: p.Key, Scheme: p.Scheme, Version: p.Version, Versioned: p.Versioned}
	meta := store.Meta{Version: p.Version, ExpireAt: p.ExpireAt, Scheme: p.Scheme, Flags: p.Index, Aux: p.CRC}
	_, err := n.pieces.PutIfNewer(ref.storeKey(), p.Data, meta)
	return err
}

// storeKey is where a node keeps a piece: scheme id, a versioned flag, the
// version for versioned pieces, then the key, so one node can hold pieces of
// the same key in two schemes (during a move) or two versions (split).
func (r pieceRef) storeKey() []byte {
	e := enc(make([]byte, 0, 11+len(r.Key))).u16(r.Scheme)
	if r.Versioned {
		e = e.u8(1).u64(r.Version)
	} else {
		e = e.u8(0)
	}
	return append(e, r.Key...)
}

// loadPiece returns a stored piece's bytes after checking its checksum.
func (n *Node) loadPiece(r pieceRef) ([]byte, error) {
	data, meta, ok := n.pieces.Get(r.storeKey(), nil)
	if !ok || (r.Versioned && meta.Version != r.Version) {
		return nil, errPieceGone
	}
	if checksum(data) != meta.Aux {
		return nil, fmt.Errorf("server: piece of %q fails its checksum", r.Key)
	}
	return data, nil
}

// dropPieces releases r: the exact version for split, every replica up to
// r.Version otherwise.
func (n *Node) dropPieces(r pieceRef) {
	if r.Versioned {
		n.pieces.Delete(r.storeKey())
		return
	}
	n.pieces.DeleteIf(r.storeKey(), func(m store.Meta) bool {
		if r.Exact {
			return m.Version == r.Version
		}
		return m.Version <= r.Version
	})
}

// gatherSplit fetches the k data shards of a committed split object in
// parallel, falls back to parity shards for any that fail, and decodes.
func (n *Node) gatherSplit(ctx context.Context, m *cluster.Map, key []byte, meta store.Meta, entry cluster.SchemeEntry) ([]byte, error) {
	spec := entry.Spec
	targets, err := pieceTargets(m, key, spec)
	if err != nil {
		return nil, err
	}
	shards := make([][]byte, len(targets))
	errs := make([]error, len(targets))
	fetch := func(idx []int) {
		var wg sync.WaitGroup
		for _, i := range idx {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				ref := pieceRef{Key: key, Scheme: entry.ID, Version: meta.Version, Versioned: true}
				shards[i], errs[i] = n.getPiece(ctx, targets[i].node, ref)
			}(i)
		}
		wg.Wait()
	}
	fetch(seq(0, spec.K))
	if missing := failed(errs[:spec.K]); len(missing) > 0 {
		for _, err := range errs {
			if errors.Is(err, errPieceGone) {
				return nil, errPieceGone
			}
		}
		fetch(seq(spec.K, spec.K+spec.M))
	}
	v, err := split.Decode(shards, key, spec.K, spec.M)
	if err != nil {
		return nil, fmt.Errorf("server: key %q cannot be read: %w", key, errors.Join(append([]error{err}, errs...)...))
	}
	return v, nil
}

func (n *Node) getPiece(ctx context.Context, node cluster.Node, r pieceRef) ([]byte, error) {
	if node.ID == n.id {
		return n.loadPiece(r)
	}
	resp, err := n.call(ctx, node, msgGetPiece, r.encode(nil))
	var re *transport.RemoteError
	if errors.As(err, &re) && re.Msg == errPieceGone.Error() {
		return nil, errPieceGone
	}
	return resp, err
}

// releaseAll sends each release to the nodes holding its pieces. With wait
// the caller blocks until all are acknowledged; otherwise it runs in the
// background (a lost release leaves garbage that issue 4's scrub reclaims,
// never a wrong read: reads go through the primary record's version).
func (n *Node) releaseAll(ctx context.Context, rels []release, wait bool) {
	if len(rels) == 0 {
		return
	}
	run := func(ctx context.Context) {
		for _, r := range rels {
			n.releaseOne(ctx, r)
		}
	}
	if wait {
		run(ctx)
		return
	}
	go run(context.Background())
}

func (n *Node) releaseOne(ctx context.Context, r release) {
	m := n.ctl.Map()
	entry, ok := m.SchemeByID(r.scheme)
	if !ok {
		return
	}
	targets, err := pieceTargets(m, r.key, entry.Spec)
	if err != nil {
		return
	}
	ref := pieceRef{Key: r.key, Scheme: r.scheme, Version: r.version, Versioned: entry.Spec.Kind == scheme.Split, Exact: r.exact}
	var wg sync.WaitGroup
	for _, t := range targets {
		if t.node.ID == n.id {
			n.dropPieces(ref)
			continue
		}
		wg.Add(1)
		go func(node cluster.Node) {
			defer wg.Done()
			if _, err := n.call(ctx, node, msgDelPiece, ref.encode(nil)); err != nil {
				n.log.Debug("release failed", "key", string(r.key), "node", node.ID, "err", err)
			}
		}(t.node)
	}
	wg.Wait()
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func failed(errs []error) []int {
	var out []int
	for i, err := range errs {
		if err != nil {
			out = append(out, i)
		}
	}
	return out
}
