package commands

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/wire"
)

// This file is the data path of a slot migration (decision 0016), which
// moves the slots of a shard's range end to a new shard, key by key, while
// they serve.
//
// The map routes a migrating slot to its source shard's coordinator until
// the migration ends. There a command on such a key runs while the key is
// here, and is forwarded to the importing shard's coordinator, marked
// (forwardReq.Import), once the key has left; a command on keys some here
// and some gone answers TRYAGAIN, as Redis Cluster does. A key that is
// absent here never comes back (nothing creates it here: a command on an
// absent key is forwarded), so "absent" is final and the importer is the
// authority on every key the source does not hold.
//
// The source moves keys in batches (moveKeys), each key under its move
// lock, which every command on the key takes first: it reads them, the
// importer writes them (under its own placement: its map view) and
// answers which it stored, and the source deletes those. Commands on the
// batch's keys wait meanwhile; other keys of the slot do not. When
// a pass over the range finds no key left, the source proposes
// MigrationDone and the map routes the slots to the importer.

// moveLockStripes is how many locks keys' moves hash to.
const moveLockStripes = 1024

// moveLocks serialise, at a migration's source, each key's commands with
// its move.
type moveLocks [moveLockStripes]sync.Mutex

var moveSeed = maphash.MakeSeed()

// lock takes the locks of keys in stripe order (so two commands never
// wait for each other) and returns what unlocks them.
func (l *moveLocks) lock(keys [][]byte) func() {
	var buf [8]uint16
	stripes := buf[:0]
	for _, k := range keys {
		s := uint16(maphash.Bytes(moveSeed, k) % moveLockStripes)
		if !slices.Contains(stripes, s) {
			stripes = append(stripes, s)
		}
	}
	slices.Sort(stripes)
	for _, s := range stripes {
		l[s].Lock()
	}
	return func() {
		for _, s := range stripes {
			l[s].Unlock()
		}
	}
}

// exportingTo returns the shard importing the slots of keys when one of
// them migrates away from this node's shard, else nil.
func exportingTo(m *cluster.Map, keys [][]byte) *cluster.Shard {
	for _, k := range keys {
		if imp := m.ImporterOf(keyslot.Of(k)); imp != nil {
			return imp
		}
	}
	return nil
}

// errSplitKeys answers a command whose keys are partly moved.
var errSplitKeys = resp.Err("TRYAGAIN Multiple keys request during rehashing of slot")

// runExporting runs a command of keys this node coordinates, some in a
// slot migrating to imp: here if every such key is here, at imp's
// coordinator if none is, else TRYAGAIN. run runs it here.
func (n *Server) runExporting(ctx context.Context, cs *connState, m *cluster.Map, imp *cluster.Shard, args, keys [][]byte, run func() resp.Reply) resp.Reply {
	unlock := n.moves.lock(keys)
	defer unlock()
	here, gone := 0, 0
	for _, k := range keys {
		if m.ImporterOf(keyslot.Of(k)) == nil {
			here++ // a slot that stays: its keys are here
			continue
		}
		cur, err := n.MetaCommitted(ctx, k)
		if err != nil {
			return errReply(err)
		}
		if cur.Exists {
			here++
		} else {
			gone++
		}
	}
	switch {
	case gone == 0:
		r := run()
		n.dropDeleted(ctx, m, imp, keys)
		return r
	case here > 0:
		return errSplitKeys
	}
	owner, ok := m.CoordinatorOf(imp)
	if !ok {
		return resp.Errorf("TRYAGAIN memgest: slot %d is migrating to shard %d, which has no coordinator now", keyslot.Of(keys[0]), imp.ID)
	}
	if err := n.sendDrops(ctx, m, imp, keys); err != nil {
		return resp.Errorf("TRYAGAIN memgest: slot %d is migrating and its importer has not confirmed a deletion yet: %v", keyslot.Of(keys[0]), err)
	}
	payload, tail := forwardReq{Proto: cs.proto, Args: args, Import: true}.spool()
	return n.relay(ctx, core.PeerReq{Node: owner, Typ: peer.MsgForward, Payload: payload, Tail: tail}, "command")
}

// dropDeleted tells imp's coordinator to drop its copy, if any, of each
// key of keys in a migrating slot that a command just deleted here. A copy
// there can only be a stale one, recovered from pieces when the importer's
// coordinator failed over (its holders may hold this node's pieces of the
// slot too); once the key is absent here the importer is its authority, so
// such a copy must go before any command reaches it. A drop that fails is
// kept and sent again before the next command on the key is forwarded,
// and before the migration ends.
func (n *Server) dropDeleted(ctx context.Context, m *cluster.Map, imp *cluster.Shard, keys [][]byte) {
	for _, k := range keys {
		if m.ImporterOf(keyslot.Of(k)) == nil {
			continue
		}
		if cur, err := n.MetaCommitted(ctx, k); err != nil || cur.Exists {
			continue
		}
		n.exports.mu.Lock()
		if n.exports.drops == nil {
			n.exports.drops = map[string]bool{}
		}
		n.exports.drops[string(k)] = true
		n.exports.mu.Unlock()
	}
	_ = n.sendDrops(ctx, m, imp, keys) // kept when it fails, and sent again
}

// sendDrops sends imp's coordinator the drops still owed for keys (all of
// them when keys is nil), and forgets those it confirmed.
func (n *Server) sendDrops(ctx context.Context, m *cluster.Map, imp *cluster.Shard, keys [][]byte) error {
	n.exports.mu.Lock()
	var owed []string
	if keys == nil {
		for k := range n.exports.drops {
			if s := keyslot.Of([]byte(k)); s >= imp.First && s <= imp.Last {
				owed = append(owed, k)
			}
		}
	}
	for _, k := range keys {
		if n.exports.drops[string(k)] {
			owed = append(owed, string(k))
		}
	}
	n.exports.mu.Unlock()
	if len(owed) == 0 {
		return nil
	}
	owner, ok := m.CoordinatorOf(imp)
	if !ok {
		return fmt.Errorf("shard %d has no coordinator", imp.ID)
	}
	for len(owed) > 0 {
		some := owed[:min(len(owed), maxMoveBatch)]
		owed = owed[len(some):]
		batch := migrateBatch{From: n.NodeID, Epoch: m.Epoch}
		for _, k := range some {
			batch.Keys = append(batch.Keys, migrateKey{Key: []byte(k), Drop: true})
		}
		errs, err := n.sendBatch(ctx, owner, batch)
		if err != nil {
			return err
		}
		n.exports.mu.Lock()
		for i, k := range some {
			if errs[i] == nil {
				delete(n.exports.drops, k)
			}
		}
		n.exports.mu.Unlock()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// sendBatch sends batch to owner, the importing shard's coordinator, and
// returns its answer for each key.
func (n *Server) sendBatch(ctx context.Context, owner cluster.Node, batch migrateBatch) ([]error, error) {
	payload, tail := batch.spool()
	out, err := n.CallUnder(ctx, core.PeerReq{Node: owner, Typ: peer.MsgMigrate, Payload: payload, Tail: tail}, nil)
	if err != nil {
		return nil, err
	}
	return decodeMigrateResp(out, len(batch.Keys))
}

// importsHere says whether this node coordinates the shard importing
// every key's slot, so that a command its source forwarded runs here.
// A node whose map is behind the source's waits for the migration to
// reach it (a second at most).
func (n *Server) importsHere(ctx context.Context, keys [][]byte) bool {
	check := func(m *cluster.Map) bool {
		for _, k := range keys {
			imp := m.ImporterOf(keyslot.Of(k))
			if imp == nil {
				return false
			}
			if c, ok := m.CoordinatorOf(imp); !ok || c.ID != n.NodeID {
				return false
			}
		}
		return true
	}
	if check(n.Ctl.Map()) {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m, err := n.Ctl.Wait(wctx, func(m *cluster.Map) bool { // this node's views
		c, ok := m.Coordinator(keyslot.Of(keys[0]))
		return check(m) || (ok && c.ID == n.NodeID)
	})
	return err == nil && check(m)
}

// migrateBatch is the keys one peer.MsgMigrate moves to the importer.
// From and Epoch are the source's coordinator and its map's epoch: the
// importer catches up to the epoch and refuses a move from a node no
// longer the source's coordinator, so a move a failed source sent that
// arrives after its successor's drops cannot bring a deleted key back.
type migrateBatch struct {
	From  cluster.NodeID
	Epoch uint64
	Keys  []migrateKey
}

// migrateKey is one key of a batch: the value, its scheme, TTL and
// version (the importer's versions for it go above), or Lost when the
// source could not read it (the importer then reports it lost too: a lost
// key never reads as nil), or Drop when a command deleted it at the
// source (dropDeleted).
type migrateKey struct {
	Key      []byte
	Scheme   uint16
	ExpireAt int64
	Version  uint64
	Lost     bool
	Drop     bool
	Value    []byte
}

// maxMoveBatch bounds the keys of one MsgMigrate a node accepts.
const maxMoveBatch = 1024

// spool encodes b; the values are referred to, not copied.
func (b migrateBatch) spool() (payload []byte, tail [][]byte) {
	s := wire.Spool{Cur: wire.Enc(nil).Str(string(b.From)).U64(b.Epoch).U32(uint32(len(b.Keys)))}
	for _, k := range b.Keys {
		s.Cur = s.Cur.Bytes(k.Key).U16(k.Scheme).I64(k.ExpireAt).U64(k.Version).Flag(k.Lost).Flag(k.Drop)
		s.Bytes(k.Value)
	}
	return s.Frame()
}

func decodeMigrate(b []byte) (migrateBatch, error) {
	d := wire.NewDec(b)
	r := migrateBatch{From: cluster.NodeID(d.Str()), Epoch: d.U64()}
	count := d.U32()
	if d.Err() != nil || count == 0 || count > maxMoveBatch {
		return migrateBatch{}, wire.ErrMalformed
	}
	r.Keys = make([]migrateKey, count)
	for i := range r.Keys {
		r.Keys[i] = migrateKey{Key: d.Bytes(), Scheme: d.U16(), ExpireAt: d.I64(), Version: d.U64(), Lost: d.Flag(), Drop: d.Flag(), Value: d.Bytes()}
		if len(r.Keys[i].Key) == 0 || len(r.Keys[i].Key) > MaxKeySize {
			return migrateBatch{}, wire.ErrMalformed
		}
	}
	return r, d.Done()
}

// keys are b's keys.
func (b migrateBatch) keys() [][]byte {
	out := make([][]byte, len(b.Keys))
	for i, k := range b.Keys {
		out[i] = k.Key
	}
	return out
}

// encodeMigrateResp is the importer's answer to a batch: per key, "" when
// it stored (or dropped) it, else why not.
func encodeMigrateResp(errs []error) []byte {
	e := wire.Enc(nil).U32(uint32(len(errs)))
	for _, err := range errs {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		e = e.Str(msg)
	}
	return e
}

// decodeMigrateResp reads the answer to a batch of n keys.
func decodeMigrateResp(b []byte, n int) ([]error, error) {
	d := wire.NewDec(b)
	if count := d.U32(); d.Err() != nil || int(count) != n {
		return nil, fmt.Errorf("server: a move's answer lists %d keys, %d were sent", count, n)
	}
	errs := make([]error, n)
	for i := range errs {
		if msg := d.Str(); msg != "" {
			errs[i] = errors.New(msg)
		}
	}
	return errs, d.Done()
}

// OnMigrate stores the keys their slots' source moves here: this node
// must coordinate the shards importing the slots. Each write goes through
// the coordinator's write path under the key's scheme, placed by the
// importing shard (this node's map view); the keys of a batch are
// written at once, and the answer says which were stored.
func (n *Server) OnMigrate(b []byte) ([]byte, error) {
	r, err := decodeMigrate(b)
	if err != nil {
		return nil, err
	}
	keys := r.keys()
	ctx, cancel := context.WithTimeout(context.Background(), n.Cfg.PeerTimeout*4/5+core.TransferTime(len(b)))
	defer cancel()
	if _, err := n.Ctl.WaitEpoch(ctx, r.Epoch); err != nil {
		return nil, err
	}
	if !n.importsHere(ctx, keys) {
		return nil, fmt.Errorf("server: this node does not import every slot of the keys moved (slot %d first)", keyslot.Of(keys[0]))
	}
	m := n.Ctl.Map()
	for _, k := range keys {
		imp := m.ImporterOf(keyslot.Of(k))
		if c, ok := m.CoordinatorOf(&m.Shards[imp.From]); !ok || c.ID != r.From {
			return nil, fmt.Errorf("server: %s no longer coordinates slot %d's source shard", r.From, keyslot.Of(k))
		}
	}
	// While an importing shard recovers here (its coordinator failed),
	// nothing writes to it: recovery judges the shard's pieces as it
	// listed them, and would release a move's pieces stored meanwhile as
	// a stale version of a key the source still holds. The source retries.
	if _, refused := n.refuseKeys(m, keys); refused {
		return nil, fmt.Errorf("server: slot %d's importing shard is recovering; the move waits", keyslot.Of(keys[0]))
	}
	if err := n.stripes.RestoreKeys(ctx, keys); err != nil {
		return nil, fmt.Errorf("server: restoring stripe chunks before a move: %w", err)
	}
	errs := make([]error, len(r.Keys))
	_ = core.ForEach(ctx, len(r.Keys), len(r.Keys), func(ctx context.Context, i int) error {
		errs[i] = n.importKey(ctx, m, r.Keys[i])
		return nil
	})
	return encodeMigrateResp(errs), nil
}

// importKey stores (or drops) one key of a batch OnMigrate accepted.
func (n *Server) importKey(ctx context.Context, m *cluster.Map, k migrateKey) error {
	if k.Drop {
		_, err := n.del(ctx, k.Key)
		return err
	}
	entry, ok := m.SchemeByID(k.Scheme)
	if !ok {
		return fmt.Errorf("server: key %q moves under unknown scheme id %d", k.Key, k.Scheme)
	}
	n.Versions.Observe(k.Version)
	if k.Lost {
		n.Lost.Add(kind.LostKey{Key: string(k.Key), Scheme: entry.Name(), Cause: "it was lost before its slot migrated here"})
		return nil
	}
	if k.ExpireAt != 0 && k.ExpireAt <= core.NowMs() {
		return nil // expired on the way: the source deletes it
	}
	return n.SetImported(ctx, k.Key, k.Value, k.ExpireAt, entry)
}

// exports is the set of migrations this node runs as their source.
type exports struct {
	mu      sync.Mutex
	running map[int]bool // by importing shard
	// drops are the keys deleted here in a migrating slot whose importer
	// has not confirmed it dropped its copy (dropDeleted).
	drops map[string]bool
	wg    sync.WaitGroup
}

// ExportLoop runs, until ctx ends, the migrations whose source shard this
// node coordinates: on every new map, and every heartbeat interval after
// one paused on an error.
func (n *Server) ExportLoop(ctx context.Context) {
	defer n.exports.wg.Wait()
	n.OnMaps(ctx, n.Cfg.HeartbeatInterval, func(m *cluster.Map) { n.startExports(ctx, m) })
}

// startExports starts moving the keys of every migration whose source
// shard this node coordinates in m, unless it does already.
func (n *Server) startExports(ctx context.Context, m *cluster.Map) {
	for _, imp := range m.Importing() {
		src := &m.Shards[imp.From]
		if c, ok := m.CoordinatorOf(src); !ok || c.ID != n.NodeID || src.Recovering {
			continue
		}
		n.exports.mu.Lock()
		if n.exports.running == nil {
			n.exports.running = map[int]bool{}
		}
		if n.exports.running[imp.ID] {
			n.exports.mu.Unlock()
			continue
		}
		n.exports.running[imp.ID] = true
		n.exports.mu.Unlock()
		n.exports.wg.Add(1)
		go func(id int) {
			defer n.exports.wg.Done()
			defer func() {
				n.exports.mu.Lock()
				delete(n.exports.running, id)
				n.exports.mu.Unlock()
			}()
			if err := n.export(ctx, id); err != nil && ctx.Err() == nil {
				n.Log.Warn("migration paused", "shard", id, "err", err)
			}
		}(imp.ID)
	}
}

// export moves every key of the slots shard id imports, then proposes
// MigrationDone. It returns when the migration ended, or this node is no
// longer its source, or on an error (the next map starts it again).
func (n *Server) export(ctx context.Context, id int) error {
	defer n.Migration.Begin()()
	n.Migration.Started.CompareAndSwap(0, time.Now().UnixNano())
	m := n.Ctl.Map()
	imp := m.Shards[id]
	n.settleSlots(ctx, imp.First, imp.Last)
	for {
		m = n.Ctl.Map()
		if id >= len(m.Shards) || !m.Shards[id].Importing {
			return nil
		}
		if c, ok := m.CoordinatorOf(&m.Shards[m.Shards[id].From]); !ok || c.ID != n.NodeID {
			return nil
		}
		keys := n.keysToMove(imp.First, imp.Last)
		if len(keys) == 0 {
			// The commands that deleted the last keys, and owe the
			// importer their drops, end first.
			n.settleSlots(ctx, imp.First, imp.Last)
			if err := n.sendDrops(ctx, m, &m.Shards[id], nil); err != nil {
				return fmt.Errorf("drops owed to the importer: %w", err)
			}
			_, err := n.Propose(ctx, cluster.MigrationDone{Shard: id, By: n.NodeID})
			return err
		}
		n.Migration.KeysTotal.Add(int64(len(keys)))
		pace := core.NewPacer() // the rate may change while the movers run
		batches := (len(keys) + moveBatch - 1) / moveBatch
		err := core.ForEach(ctx, batches, moveWorkers, func(ctx context.Context, i int) error {
			began := time.Now()
			size, err := n.moveKeys(ctx, m, &m.Shards[id], keys[i*moveBatch:min(len(keys), (i+1)*moveBatch)])
			if err != nil {
				return err
			}
			core.Rest(ctx, time.Since(began), n.Cfg.MigrateShare)
			return pace.Wait(ctx, int64(size), n.Ctl.Map().MigrateRate())
		})
		if err != nil {
			return err
		}
	}
}

// settleSlots waits until every command on slots first..last that began
// before this node saw the migration has ended: those may have created a
// key here without seeing the migration, and the next pass over the keys
// must find it.
func (n *Server) settleSlots(ctx context.Context, first, last int) {
	for s := first; s <= min(last, first+lockStripes-1); s++ {
		n.slots.lock(s)
		n.slots.unlock(s) // empty: waiting for the holders is the point
	}
}

// keysToMove lists the keys this node holds in slots first..last.
func (n *Server) keysToMove(first, last int) [][]byte {
	var out [][]byte
	var cursor uint64
	for {
		cursor = n.walkKeys(cursor, 1024, func(k []byte, _ int64) {
			if s := keyslot.Of(k); s >= first && s <= last {
				out = append(out, append([]byte(nil), k...))
			}
		})
		if cursor == 0 {
			return out
		}
	}
}

// moveKeys moves keys to imp's coordinator in one message, under their
// move locks: each is read, all are sent, and those the importer stored
// are deleted here. It returns the bytes moved, and the first key that did
// not move (the next pass moves it).
func (n *Server) moveKeys(ctx context.Context, m *cluster.Map, imp *cluster.Shard, keys [][]byte) (int, error) {
	unlock := n.moves.lock(keys)
	defer unlock()
	owner, ok := m.CoordinatorOf(imp)
	if !ok {
		return 0, fmt.Errorf("shard %d has no coordinator", imp.ID)
	}
	batch, err := n.readToMove(ctx, m, keys)
	if err != nil || len(batch.Keys) == 0 {
		return 0, err
	}
	errs, err := n.sendBatch(ctx, owner, batch)
	if err != nil {
		return 0, err
	}
	var size atomic.Int64
	_ = core.ForEach(ctx, len(batch.Keys), len(batch.Keys), func(ctx context.Context, i int) error {
		k := batch.Keys[i]
		if errs[i] != nil {
			errs[i] = fmt.Errorf("moving key %q: %w", k.Key, errs[i])
			return nil
		}
		errs[i] = n.RMWMeta(ctx, k.Key, func(cur core.Current) (*core.WriteOp, error) {
			if !cur.Exists {
				return nil, nil
			}
			return &core.WriteOp{Key: k.Key, Del: true, Entry: cur.Entry}, nil
		})
		if errs[i] != nil {
			errs[i] = fmt.Errorf("deleting moved key %q: %w", k.Key, errs[i])
			return nil
		}
		size.Add(int64(len(k.Key) + len(k.Value)))
		n.Migration.KeysDone.Add(1)
		n.Migration.BytesDone.Add(int64(len(k.Key) + len(k.Value)))
		return nil
	})
	for _, err := range errs {
		if err != nil {
			return int(size.Load()), err
		}
	}
	return int(size.Load()), nil
}

// readToMove reads keys, at once, into a batch for imp's coordinator,
// leaving out those deleted or expired since the listing.
func (n *Server) readToMove(ctx context.Context, m *cluster.Map, keys [][]byte) (migrateBatch, error) {
	read := make([]migrateKey, len(keys))
	found := make([]bool, len(keys))
	err := core.ForEach(ctx, len(keys), len(keys), func(ctx context.Context, i int) error {
		cur, err := n.Get(ctx, keys[i])
		var lost *kind.LostError
		read[i].Key = keys[i]
		switch {
		case errors.As(err, &lost):
			read[i].Lost, read[i].Scheme, found[i] = true, m.DefaultScheme().ID, true
		case err != nil:
			return fmt.Errorf("reading key %q to move: %w", keys[i], err)
		case cur.Exists:
			read[i].Scheme, read[i].ExpireAt, read[i].Version, read[i].Value = cur.Entry.ID, cur.Meta.ExpireAt, cur.Meta.Version, cur.Value
			found[i] = true
		}
		return nil
	})
	batch := migrateBatch{From: n.NodeID, Epoch: m.Epoch}
	for i, k := range read {
		if found[i] {
			batch.Keys = append(batch.Keys, k)
		}
	}
	return batch, err
}

// moveBatch is how many keys one message moves (moveKeys), and
// moveWorkers how many such batches one migration's source moves at once.
// A key moved alone cost the cluster about four client operations' CPU,
// much of it the per-message work of its round trip
// (docs/benchmarks/rebalance-cost.md); one at a time left both ends idle
// (0.6 MB/s of small keys between two processes on loopback).
const (
	moveBatch   = 16
	moveWorkers = 4
)
