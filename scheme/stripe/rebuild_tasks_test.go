package stripe

import (
	"context"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// TestListLevel: a list's rebuild task has the redundancy its least
// protected live chunk has left (keyTolerance), for stripe:4+2 and
// hybrid:4+2 on eight nodes (positions 0–3 data, 4 parity, 5 parity or
// replica), the failed nodes' positions listed for rebuild.
func TestListLevel(t *testing.T) {
	for _, c := range []struct {
		spec   string
		failed []int // positions of shard 0's placement
		want   int
	}{
		{"stripe:4+2", nil, 2},
		{"stripe:4+2", []int{0}, 1},
		{"stripe:4+2", []int{0, 1}, 0},
		{"stripe:4+2", []int{4, 5}, 0},
		{"hybrid:4+2", []int{0}, 1},
		{"hybrid:4+2", []int{0, 1}, 1}, // the live chunks' copies are on the replica holder too
		{"hybrid:4+2", []int{1, 5}, 0}, // without the replica holder, two losses leave nothing spare
		{"hybrid:4+2", []int{4}, 1},
	} {
		m := kindtest.Map(t, 8, c.spec)
		placement := m.Shards[0].Placement
		for _, p := range c.failed {
			m = kindtest.Apply(t, m, cluster.MarkFailed{ID: placement[p]})
		}
		spec, _ := scheme.Parse(c.spec)
		if got := listLevel(m, spec, 0); got != c.want {
			t.Errorf("%s with positions %v failed: level %d, want %d", c.spec, c.failed, got, c.want)
		}
	}
}

// TestBatchStripeLevel: a batch stripe's level is the least tolerance of
// its data chunks' objects (batchTolerance, as SCHEME.OF reports it).
func TestBatchStripeLevel(t *testing.T) {
	for _, c := range []struct {
		spec   string
		failed []int
		want   int
	}{
		{"stripe:4+2", nil, 2},
		{"stripe:4+2", []int{1}, 1},
		{"stripe:4+2", []int{1, 4}, 0},
		{"hybrid:4+2", []int{1}, 1}, // the coordinator keeps every data chunk, and holds no piece
		{"hybrid:4+2", []int{1, 4}, 0},
	} {
		m := kindtest.Map(t, 8, c.spec)
		placement := m.Shards[0].Placement
		self := placement[0]
		for _, p := range c.failed {
			m = kindtest.Apply(t, m, cluster.MarkFailed{ID: placement[p]})
		}
		spec, _ := scheme.Parse(c.spec)
		holders, err := listHolders(m, spec, 0)
		must(t, err)
		keeps := NewBatchData(spec.K, spec.Kind == scheme.Hybrid).keeps
		if got := batchStripeLevel(spec, &m.Shards[0], holders, 0, self, keeps); got != c.want {
			t.Errorf("%s with positions %v failed: level %d, want %d", c.spec, c.failed, got, c.want)
		}
	}
}

// TestRebuildTasksOfBatchStripes: after two failures in a stripe@batch
// list, the coordinator's rebuild plans its batch stripes at level 0 with
// the bytes of the lost pieces, which it then sends (beside the list's
// own task, which has no chunk to move); once the tasks ran, no batch
// stripe is left to rebuild.
func TestRebuildTasksOfBatchStripes(t *testing.T) {
	m, _, net, _, coord, p := batchSetup(t, 8, "stripe:4+2/512@batch")
	writeBatch(t, p, keysOfShard(m.Shards[0], "lv", 200), 4, 8)
	for _, pos := range []int{2, 5} {
		net.kill(m.Shards[0].Placement[pos])
		m = kindtest.Apply(t, m, cluster.MarkFailed{ID: m.Shards[0].Placement[pos]})
	}
	net.setMap(m)
	ctx := context.Background()
	tasks, err := coord.RebuildTasks(ctx, m, m.Shards[0])
	must(t, err)
	batch := 0
	for _, task := range tasks {
		if task.Level != 0 {
			t.Errorf("%s at level %d after two failures of a 4+2 list, want 0", task.What, task.Level)
		}
		before := coord.Stats().RebuiltBytes.Load()
		must(t, task.Run(ctx))
		if sent := coord.Stats().RebuiltBytes.Load() - before; strings.HasPrefix(task.What, "batch") {
			batch++
			if task.Bytes <= 0 || sent != task.Bytes {
				t.Errorf("%s planned %d bytes and sent %d", task.What, task.Bytes, sent)
			}
		}
	}
	if batch != 1 {
		t.Fatalf("tasks after two failures: %+v, want one of batch stripes", tasks)
	}
	tasks, err = coord.RebuildTasks(ctx, m, m.Shards[0])
	must(t, err)
	for _, task := range tasks {
		if strings.HasPrefix(task.What, "batch") {
			t.Fatalf("%s left to rebuild once its task ran", task.What)
		}
	}
}
