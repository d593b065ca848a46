package stripe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/scheme"
)

// This file sends a coordinator's chunk updates to their parity holders.
// Updates of one scheme that are ready together share frames: the writes
// of one pipeline (writeBlind), and those of concurrent connections, which
// join a group (sendGroups) the way replicated writes do (commitGroups).

// sendGroups is group commit for one stripe scheme's updates: the first
// sender to arrive opens a group and yields the processor once, so that
// the writes of other connections that are ready join it; then the group's
// updates go out in one frame per parity holder (send), and every
// member gets the group's result. A failure fails every member: they share
// frames, and a holder that does not answer fails them all in any case.
type sendGroups struct {
	mu   sync.Mutex
	open *sendGroup
}

// sendGroup is one group's updates and, once done is closed, its result.
type sendGroup struct {
	ups  []Update
	err  error
	done chan struct{}
}

// join adds ups to the open group, opening one if there is none (lead:
// the caller must then send it, with lead).
func (gs *sendGroups) join(ups []Update) (g *sendGroup, lead bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.open == nil {
		gs.open, lead = &sendGroup{done: make(chan struct{})}, true
	}
	gs.open.ups = append(gs.open.ups, ups...)
	return gs.open, lead
}

// lead sends group g, which the caller opened, once the writers ready to
// join it have had the processor.
func (gs *sendGroups) lead(ctx context.Context, eng *Engine, s *schemeState, g *sendGroup) {
	runtime.Gosched()
	gs.mu.Lock()
	gs.open = nil
	gs.mu.Unlock()
	g.err = eng.send(ctx, s, g.ups)
	close(g.done)
}

// sendGrouped sends ups as part of a group and waits for the
// group's result. The updates of a large object go alone: writes that
// joined its group would wait for all of them.
func (eng *Engine) sendGrouped(ctx context.Context, s *schemeState, ups []Update) error {
	if updatesSize(ups) > frameMax {
		return eng.send(ctx, s, ups)
	}
	g, lead := s.groups.join(ups)
	if lead {
		s.groups.lead(ctx, eng, s, g)
	} else {
		<-g.done // the leader finishes within the peer timeout
	}
	return g.err
}

// updatesSize is the bytes ups carry.
func updatesSize(ups []Update) int {
	size := 0
	for _, u := range ups {
		size += len(u.Bytes)
	}
	return size
}

// send sends ups to every parity holder of their chunks' lists and
// waits until each holder has applied each one. A holder that reports an
// update Missing (a seal or free overtook an earlier update, or an earlier
// frame was lost) gets what it lacks from the chunk's log, a few rounds at
// most. A holder on a failed node is skipped: the stripe then runs with
// reduced tolerance until it is rebuilt.
func (eng *Engine) send(ctx context.Context, s *schemeState, ups []Update) error {
	for round := 0; len(ups) > 0; round++ {
		if round == 4 {
			return fmt.Errorf("stripe: parity holders still lack updates of %s after %d rounds", ups[0].Chunk, round)
		}
		lacking, err := eng.sendRound(ctx, s, ups)
		if err != nil {
			return err
		}
		ups = lacking
	}
	return nil
}

// sendRound sends ups once and returns the updates some holder
// still lacks. The Stable marks queued for the lists the round goes to
// ride along (Data.TakeMarks; with no updates, every mark goes), so
// that holders drop their backups of updates every holder has; marks that
// cannot be sent are queued again.
func (eng *Engine) sendRound(ctx context.Context, s *schemeState, ups []Update) ([]Update, error) {
	var lists []uint16 // nil: every list's marks
	for _, u := range ups {
		if !slices.Contains(lists, u.Chunk.List) {
			lists = append(lists, u.Chunk.List)
		}
	}
	s.mu.Lock()
	marks := s.data.TakeMarks(lists)
	s.data.Sending(ups, 1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.data.Sending(ups, -1)
		s.mu.Unlock()
	}()
	r := round{pending: make(map[updateKey]int, len(ups))}
	if err := r.plan(eng.host.Map(), s.spec, slices.Concat(ups, marks)); err != nil {
		eng.requeueMarks(s, marks)
		return nil, err
	}
	if len(r.frames) > 1 && faults.Armed(faults.StripeBetweenHolders) {
		eng.callEach(ctx, []Request{r.frames[0].request(s.id)}) // one holder applies them; a repeat is a no-op
		faults.Hit(faults.StripeBetweenHolders)
	}
	replies, errs, sent := eng.sendFrames(ctx, r.frames, s.id)
	if e, ok := eng.host.Map().SchemeByID(s.id); ok {
		eng.host.SentParity(e, sent)
	}
	lacking, failures := r.settle(s, replies, errs)
	if len(failures) > 0 {
		eng.requeueMarks(s, marks)
		return nil, errors.Join(failures...)
	}
	return dedupUpdates(lacking), nil
}

// round is one round of chunk updates: what each holder gets, in
// frames of bounded size, and how many holders have yet to apply each
// update.
type round struct {
	dests   []*holderUpdates
	frames  []*holderUpdates // dests' updates cut to size, in order per holder
	pending map[updateKey]int
}

// sendWindow is how many frames of a round a holder is sent at once:
// the next go once those are answered. A round's frames are written in
// order on the connection to the holder, so small frames queued behind
// them (other writes' updates, reads) wait for at most this many, and the
// coordinator encodes no more of a huge object's updates at a time.
const sendWindow = 4

// sendFrames sends frames in waves of sendWindow frames per
// holder, encoding each wave as it goes, and returns each frame's reply
// or error and the bytes sent to other nodes. Once a wave fails, the
// frames not yet sent fail with its error: the round fails in any case.
// Every wave carries the authority the first was sent under (see call).
func (eng *Engine) sendFrames(ctx context.Context, frames []*holderUpdates, schemeID uint16) ([][]byte, []error, int) {
	replies, errs := make([][]byte, len(frames)), make([]error, len(frames))
	waves := frameWaves(frames, sendWindow)
	fences, sent := eng.host.Fences(), 0
	for w, wave := range waves {
		reqs := make([]Request, len(wave))
		for i, f := range wave {
			reqs[i] = frames[f].request(schemeID)
			if reqs[i].Node.ID != eng.host.Self() {
				sent += len(reqs[i].Payload)
			}
		}
		got, failed := eng.host.CallEach(ctx, reqs, fences)
		var first error
		for i, f := range wave {
			replies[f], errs[f] = got[i], failed[i]
			first = cmp.Or(first, failed[i])
		}
		if first != nil {
			for _, rest := range waves[w+1:] {
				for _, f := range rest {
					errs[f] = first
				}
			}
			break
		}
	}
	return replies, errs, sent
}

// frameWaves lists frames' indexes in waves: wave w holds each holder's
// frames w·window to (w+1)·window−1, in order.
func frameWaves(frames []*holderUpdates, window int) [][]int {
	seen := map[cluster.NodeID]int{}
	var waves [][]int
	for i, f := range frames {
		w := seen[f.node.ID] / window
		seen[f.node.ID]++
		for len(waves) <= w {
			waves = append(waves, nil)
		}
		waves[w] = append(waves[w], i)
	}
	return waves
}

// request is d's msgStripe request.
func (d *holderUpdates) request(schemeID uint16) Request {
	return Request{Node: d.node, Msg: MsgUpdates, Payload: encodeUpdates(schemeID, d.ups)}
}

// frame cuts every holder's updates into frames of at most max bytes.
func (r *round) frame(max int) {
	r.frames = r.frames[:0]
	for _, d := range r.dests {
		for _, ups := range cutFrames(d.ups, max) {
			r.frames = append(r.frames, &holderUpdates{node: d.node, ups: ups})
		}
	}
}

// holderUpdates is the updates one parity holder gets in a round.
type holderUpdates struct {
	node cluster.Node
	ups  []holderUpdate
}

// plan gives each update (or Stable mark) to every parity holder of its
// chunk's list in m, but those on failed nodes, and cuts each holder's
// updates into frames. An update with no live
// holder at all is done once sent to none (settle acknowledges it): the
// holders that take those places are resynced with whole chunks, so
// keeping it logged would only grow the log with every write.
func (r *round) plan(m *cluster.Map, spec scheme.Spec, ups []Update) error {
	for _, u := range ups {
		holders, err := parityHolders(m, spec, u.Chunk.List)
		if err != nil {
			return err
		}
		if u.Kind != Stable {
			r.pending[updateKey{u.Chunk, u.Seq}] += 0 // listed, to be acknowledged even with no holder
		}
		for j, h := range holders {
			if h.Gone() {
				continue
			}
			d := r.dest(h)
			d.ups = append(d.ups, holderUpdate{J: j, U: u})
			if u.Kind != Stable { // a mark is not acknowledged
				r.pending[updateKey{u.Chunk, u.Seq}]++
			}
		}
	}
	r.frame(frameMax)
	return nil
}

func (r *round) dest(node cluster.Node) *holderUpdates {
	for _, d := range r.dests {
		if d.node.ID == node.ID {
			return d
		}
	}
	d := &holderUpdates{node: node}
	r.dests = append(r.dests, d)
	return d
}

// settle reads the holders' replies to the round's frames: an update every holder applied is
// acknowledged in its chunk's log (Data.Acked); one a holder
// reports Missing brings what that holder lacks, from the log or as a
// Resync, into lacking; refusals and failed calls are failures.
func (r *round) settle(s *schemeState, replies [][]byte, errs []error) (lacking []Update, failures []error) {
	for i, d := range r.frames {
		acks, err := decodeAcks(replies[i], len(d.ups))
		if errs[i] != nil {
			err = errs[i]
		}
		if err != nil {
			failures = append(failures, err)
			continue
		}
		for k, a := range acks {
			u := d.ups[k].U
			switch {
			case a.Refusal != "" && u.Kind == Seal && strings.Contains(a.Refusal, ErrCopyDiffers.Error()):
				// The holder's copy was damaged: it gets the chunk whole,
				// if the chunk here is sound (else a read or a write's
				// stage restores it first, and the seal goes again).
				if re, ok := s.soundResync(u.Chunk); ok {
					lacking = append(lacking, re)
					continue
				}
				failures = append(failures, fmt.Errorf("node %s: %s", d.node.PeerAddr, a.Refusal))
			case a.Refusal != "":
				failures = append(failures, fmt.Errorf("node %s: %s", d.node.PeerAddr, a.Refusal))
			case u.Kind == Stable:
			case a.Outcome == Missing:
				s.mu.Lock()
				lacking = append(lacking, s.data.CatchUp(u.Chunk, a.Through)...)
				s.mu.Unlock()
			default:
				r.pending[updateKey{u.Chunk, u.Seq}]--
			}
		}
	}
	s.mu.Lock()
	for key, left := range r.pending {
		if left == 0 {
			s.data.Acked(key.chunk, key.seq)
		}
	}
	s.mu.Unlock()
	return lacking, failures
}

// soundResync is the Resync of chunk id, if its objects pass their checks
// here.
func (s *schemeState) soundResync(id ChunkID) (Update, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if corrupt, ok := s.data.CheckChunk(id); !ok || corrupt {
		return Update{}, false
	}
	return s.data.Resync(id)
}

// requeueMarks queues marks again after a round that failed.
func (eng *Engine) requeueMarks(s *schemeState, marks []Update) {
	if len(marks) > 0 {
		s.mu.Lock()
		s.data.PutMarks(marks)
		s.mu.Unlock()
	}
}

// updateKey names one update of one chunk.
type updateKey struct {
	chunk ChunkID
	seq   uint32
}

// dedupUpdates drops repeats (several holders may lack the same update).
func dedupUpdates(ups []Update) []Update {
	type key struct {
		updateKey
		kind UpdateKind
	}
	seen := map[key]bool{}
	out := ups[:0]
	for _, u := range ups {
		if k := (key{updateKey{u.Chunk, u.Seq}, u.Kind}); !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	return out
}

// sendLater sends updates that no client waits for (the removal of
// a replaced or aborted object): with the group forming, if there is one,
// else in a group of their own, in the background. One that fails stays in
// its chunk's log and goes again with the next resend (Resend).
func (eng *Engine) sendLater(s *schemeState, ups []Update) {
	if len(ups) == 0 {
		return
	}
	g, lead := s.groups.join(ups)
	if !lead {
		return // a writer's group carries them
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), eng.cfg.PeerTimeout)
		defer cancel()
		s.groups.lead(ctx, eng, s, g)
		if g.err != nil {
			eng.log.Debug("stripe updates not acknowledged; they will be sent again", "scheme", s.spec, "err", g.err)
		}
	}()
}

// Resend sends every update some holder has not acknowledged since
// the last resend and that no round in flight carries (Data.Resendable),
// and the Stable marks no update carried. The sweep loop calls it, so an
// update whose frame was lost reaches its holders even if no later seal
// asks for it, and holders drop their backups once writes stop; an update
// still on its way is not sent twice.
func (eng *Engine) Resend(ctx context.Context) {
	for _, s := range eng.all() {
		eng.finishDetachedLater(s) // removals left by a repair that failed
	}
	for _, s := range eng.all() {
		s.mu.Lock()
		// A node that writes nothing still closes the chunks of lists it
		// may no longer append to (refreshSlots), so that they can be
		// freed once compaction moves their objects out.
		closed := s.refreshSlots(eng.host.Map(), eng.host.Self())
		ups, marks := append(closed, s.data.Resendable()...), s.data.HasMarks()
		s.mu.Unlock()
		var err error
		switch {
		case len(ups) > 0:
			err = eng.send(ctx, s, ups)
		case marks:
			_, err = eng.sendRound(ctx, s, nil) // the marks alone
		}
		if err != nil {
			eng.log.Debug("stripe resend failed", "scheme", s.spec, "err", err)
		}
	}
}
