package cluster

import (
	"slices"

	"github.com/memgest/memgest/keyslot"
)

// Loss reports are the keys lost beyond their schemes' tolerance, kept in
// the map so that they outlive any node (issue 43 §2; decision 0005 kept
// them in the memory of the node that recovered, and a failure of that
// node made its lost keys read as absent). A report names the keys it
// covers compactly: by key tags (keyslot.Tag: the slot and 10 bits of the
// key's CRC32C), or, where nothing named them, by the whole slot range.
// Every node applying the map reports the losses of the slots it
// coordinates (-LOST … may have been lost), except for the keys it holds
// and those deleted since (Cleared).

// Loss is one report: keys of slots First..Last lost for Cause, those
// with one of Tags, or every key of the range if Tags is empty.
type Loss struct {
	First  int      `json:"first"`
	Last   int      `json:"last"`
	Scheme string   `json:"scheme"`
	Lost   int      `json:"lost,omitempty"`  // pieces gone
	Total  int      `json:"total,omitempty"` // of the scheme's pieces
	Cause  string   `json:"cause,omitempty"`
	Tags   []uint32 `json:"tags,omitempty"` // sorted, unique
	// Cleared are keys covered by the report that were deleted since (a
	// key written since exists, and is never looked up here).
	Cleared []string `json:"cleared,omitempty"`
}

// Limits of the loss reports, so that a map stays small whatever a peer
// proposes: past them, a report is refused.
const (
	maxLossReports = 4096
	// MaxLossTags is how many tags one report holds.
	MaxLossTags = 1 << 16
	maxCleared  = 4096 // per report; later deletions stay local to the coordinator
	// MaxLossText is how long a report's scheme and cause may be.
	MaxLossText = 512
)

// ReportLoss adds loss reports to the map: a report equal to one there
// (same range, scheme and cause) adds its tags to it.
type ReportLoss struct {
	Losses []Loss `json:"losses"`
}

// ClearLost records that Key, covered by loss reports, was deleted: it
// reads as absent from then on, on any coordinator.
type ClearLost struct {
	Key  string `json:"key"`
	Slot int    `json:"slot"`
}

// ForgetLosses ends the tag reports of slots First..Last (FLUSHALL: the
// keys they may name are flushed); range reports stay, as on the node.
type ForgetLosses struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

func (ReportLoss) op() string   { return "report_loss" }
func (ClearLost) op() string    { return "clear_lost" }
func (ForgetLosses) op() string { return "forget_losses" }

func (c ForgetLosses) apply(m *Map) (*Map, error) {
	if c.First < 0 || c.Last >= keyslot.Count || c.First > c.Last {
		return nil, errorf(ErrBadCommand, "forgetting the losses of slots %d-%d", c.First, c.Last)
	}
	next, changed := m.Clone(), false
	next.Losses = next.Losses[:0:0]
	for _, l := range m.Losses {
		if len(l.Tags) == 0 || l.Last < c.First || l.First > c.Last {
			next.Losses = append(next.Losses, l)
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(l.Tags), func(t uint32) bool {
			slot := keyslot.TagSlot(t)
			return slot >= c.First && slot <= c.Last
		})
		changed = true
		if len(kept) > 0 {
			l.Tags = kept
			next.Losses = append(next.Losses, l)
		}
	}
	if !changed {
		return m, nil
	}
	return next, nil
}

func (c ReportLoss) apply(m *Map) (*Map, error) {
	for _, l := range c.Losses {
		if err := l.validate(); err != nil {
			return nil, err
		}
	}
	return m.withLosses(c.Losses)
}

// withLosses is m with losses merged in (m itself if they add nothing).
func (m *Map) withLosses(losses []Loss) (*Map, error) {
	next := m.Clone()
	changed := false
	for _, l := range losses {
		i := slices.IndexFunc(next.Losses, func(o Loss) bool {
			return o.First == l.First && o.Last == l.Last && o.Scheme == l.Scheme && o.Cause == l.Cause && (len(o.Tags) == 0) == (len(l.Tags) == 0)
		})
		if i < 0 {
			if len(next.Losses) >= maxLossReports {
				return nil, errorf(ErrBadCommand, "more than %d loss reports", maxLossReports)
			}
			l.Tags = sortedTags(l.Tags)
			l.Cleared = nil
			next.Losses = append(next.Losses, l)
			changed = true
			continue
		}
		merged := sortedTags(append(slices.Clone(next.Losses[i].Tags), l.Tags...))
		if len(merged) > MaxLossTags {
			return nil, errorf(ErrBadCommand, "a loss report of more than %d tags", MaxLossTags)
		}
		if !slices.Equal(merged, next.Losses[i].Tags) {
			next.Losses[i].Tags, changed = merged, true
		}
	}
	if !changed {
		return m, nil
	}
	return next, nil
}

func (c ClearLost) apply(m *Map) (*Map, error) {
	if c.Slot < 0 || c.Slot >= keyslot.Count || len(c.Key) > maxKeyLen {
		return nil, errorf(ErrBadCommand, "a cleared key of slot %d, %d bytes", c.Slot, len(c.Key))
	}
	next, changed := m.Clone(), false
	for i, l := range next.Losses {
		if c.Slot < l.First || c.Slot > l.Last || slices.Contains(l.Cleared, c.Key) || len(l.Cleared) >= maxCleared {
			continue
		}
		next.Losses[i].Cleared = append(slices.Clone(l.Cleared), c.Key)
		changed = true
	}
	if !changed {
		return m, nil
	}
	return next, nil
}

// maxKeyLen bounds a cleared key's length (Redis's keys may be larger;
// a longer one stays cleared on its coordinator only).
const maxKeyLen = 4096

func (l Loss) validate() error {
	switch {
	case l.First < 0 || l.Last >= keyslot.Count || l.First > l.Last:
		return errorf(ErrBadCommand, "a loss report of slots %d-%d", l.First, l.Last)
	case len(l.Tags) > MaxLossTags || len(l.Cause) > MaxLossText || len(l.Scheme) > MaxLossText:
		return errorf(ErrBadCommand, "a loss report too large (%d tags)", len(l.Tags))
	case l.Lost < 0 || l.Total < 0:
		return errorf(ErrBadCommand, "a loss report of %d of %d pieces", l.Lost, l.Total)
	}
	return nil
}

func sortedTags(tags []uint32) []uint32 {
	out := slices.Clone(tags)
	slices.Sort(out)
	return slices.Compact(out)
}

// LossesOf returns the loss reports touching slots first..last.
func (m *Map) LossesOf(first, last int) []Loss {
	var out []Loss
	for _, l := range m.Losses {
		if l.First <= last && l.Last >= first {
			out = append(out, l)
		}
	}
	return out
}
