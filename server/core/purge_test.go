package core

import "testing"

// TestUnfinishedDeletionsMerge: a second unfinished deletion of a key keeps
// the first one's releases, and the later version.
func TestUnfinishedDeletionsMerge(t *testing.T) {
	var u UnfinishedDeletions
	u.add([]byte("k"), 2, 5, []Release{{Key: []byte("k"), Version: 3}})
	u.add([]byte("k"), 2, 9, []Release{{Key: []byte("k"), Version: 7}})
	got := u.take(10)["k"]
	if got.Version != 9 || got.Shard != 2 || len(got.rels) != 2 {
		t.Fatalf("merged deletion %+v; want version 9 and both releases", got)
	}
}
