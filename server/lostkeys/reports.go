package lostkeys

import (
	"fmt"
	"slices"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
)

// Reports are the set in compact form, for the cluster map (issue 43 §2):
// a node's reports die with it, the map's do not. A named key travels as
// its tag (keyslot.Tag), so a report's size is that of its tags, not its
// keys'; on another node it reads "may have been lost", with a false alarm
// for one key in 1,024 of its slot.

// Report is keys of slots First..Last lost as Key says (its Scheme, Lost,
// Total and Cause): those with one of Tags, or every key of the range
// where Tags is empty.
type Report struct {
	First, Last int
	Key         kind.LostKey
	Tags        []uint32
}

// Reports returns the set's reports of slots first..last: its named keys
// and tags grouped into tag reports by what was lost, its ranges as they
// are.
func (l *Set) Reports(first, last int) []Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := func(slot int) bool { return slot >= first && slot <= last }
	byLoss := map[kind.LostKey][]uint32{}
	for name, k := range l.m {
		if in(keyslot.Of([]byte(name))) {
			k = namedAsTag(k)
			byLoss[k] = append(byLoss[k], keyslot.Tag([]byte(name)))
		}
	}
	for t, k := range l.tags {
		if in(keyslot.TagSlot(t)) {
			k.Key = ""
			byLoss[k] = append(byLoss[k], t)
		}
	}
	var out []Report
	for k, tags := range byLoss {
		slices.Sort(tags)
		out = append(out, Report{First: keyslot.TagSlot(tags[0]), Last: keyslot.TagSlot(tags[len(tags)-1]), Key: k, Tags: slices.Compact(tags)})
	}
	for _, r := range l.ranges {
		if r.first <= last && r.last >= first {
			k := r.k
			k.Key = ""
			out = append(out, Report{First: r.first, Last: r.last, Key: k})
		}
	}
	slices.SortFunc(out, func(a, b Report) int { return a.First - b.First })
	return out
}

// namedAsTag is a named key's report as its tag's: its cause says what the
// key's scheme lost.
func namedAsTag(k kind.LostKey) kind.LostKey {
	if k.Cause == "" {
		k.Cause = fmt.Sprintf("scheme %s lost %d of %d pieces", k.Scheme, k.Lost, k.Total)
	}
	k.Key, k.Unsure = "", true
	return k
}

// Seed adds reports an earlier coordinator made (the map's), and the keys
// deleted since. A report already held changes nothing; Forget and
// ForgetTagsWhere end seeded reports as they end the set's own.
func (l *Set) Seed(reports []Report, cleared []string) {
	named := l.namedTags()
	for _, r := range reports {
		if len(r.Tags) == 0 {
			l.addRange(r.First, r.Last, r.Key)
			continue
		}
		// This node's own named keys come back as tags: they are counted
		// (and answered) once, by name.
		tags := slices.DeleteFunc(slices.Clone(r.Tags), func(t uint32) bool { return named[t] })
		if len(tags) > 0 {
			l.AddTags(tags, r.Key)
		}
	}
	if len(cleared) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cleared == nil {
		l.cleared = map[string]bool{}
	}
	for _, k := range cleared {
		l.cleared[k] = true
	}
}

// addRange adds range first..last unless it is reported for k's scheme
// already: AddRange's, with the range in k's cause, and a seeded one,
// whose cause has it already.
func (l *Set) addRange(first, last int, k kind.LostKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.ContainsFunc(l.ranges, func(r lostRange) bool { return r.first == first && r.last == last && r.k.Scheme == k.Scheme }) {
		return
	}
	k.Unsure = true
	k.Key = fmt.Sprintf("(keys of slots %d-%d)", first, last)
	l.ranges = append(l.ranges, lostRange{first: first, last: last, k: k})
	l.resize()
}

// namedTags is the set of the tags of the keys reported by name.
func (l *Set) namedTags() map[uint32]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.namedTagsLocked()
}

// namedTagsLocked is namedTags; the caller holds l.mu.
func (l *Set) namedTagsLocked() map[uint32]bool {
	out := make(map[uint32]bool, len(l.m))
	for name := range l.m {
		out[keyslot.Tag([]byte(name))] = true
	}
	return out
}
