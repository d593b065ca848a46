package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestClientLibraries drives a cluster with the client libraries
// applications use (issue 28): go-redis v9's ClusterClient here, and
// redis-py's RedisCluster and Redis (tests/pyclient/drivers.py), through
// strings, hashes and transactions on keys of every scheme, and pub/sub
// (go-redis's is in checkPubSub); each library's own calls, not raw commands, so what they
// send (HSET with a map, HSCAN iterators, float replies, sharded
// subscriptions) is what memgest answers.
func TestClientLibraries(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	cl := c.clusterClient()
	for _, spec := range schemes {
		t.Run("go-redis/"+spec, func(t *testing.T) { goRedisOnScheme(ctx, t, cl, spec) })
	}
	t.Run("redis-py", func(t *testing.T) {
		got := runPyClient(t, c, "drivers.py", strings.Join(schemes, ","))
		for _, spec := range schemes {
			var res map[string]any
			if err := json.Unmarshal(got[spec], &res); err != nil {
				t.Fatalf("%s: %v in %s", spec, err, got[spec])
			}
			checkPyResults(t, spec, res)
		}
		var ps struct {
			PublishReceivers  int        `json:"publish_receivers"`
			Messages          [][]string `json:"messages"`
			SPublishReceivers int        `json:"spublish_receivers"`
			SMessage          []string   `json:"smessage"`
		}
		if err := json.Unmarshal(got["pubsub"], &ps); err != nil {
			t.Fatalf("pubsub: %v in %s", err, got["pubsub"])
		}
		wantMessages := [][]string{{"message", "py:news", "hello"}, {"pmessage", "py:news", "hello"}}
		if !reflect.DeepEqual(ps.Messages, wantMessages) || ps.SPublishReceivers != 1 ||
			!reflect.DeepEqual(ps.SMessage, []string{"smessage", "{py}:orders", "o1"}) {
			t.Fatalf("redis-py pub/sub saw %+v; want messages %v and one smessage", ps, wantMessages)
		}
		// PUBLISH counts the receivers on the node it ran on (Redis
		// Cluster's reply): 2 (channel and pattern) when the subscriber
		// is on node 0, else 0.
		if ps.PublishReceivers != 0 && ps.PublishReceivers != 2 {
			t.Fatalf("redis-py: PUBLISH answered %d receivers", ps.PublishReceivers)
		}
	})
}

// goRedisOnScheme runs strings and hashes on keys moved to spec.
func goRedisOnScheme(ctx context.Context, t *testing.T, cl *redis.ClusterClient, spec string) {
	key := func(name string) string { return fmt.Sprintf("gr:%s:{%s}", name, spec) }
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %s: %v", spec, what, err)
		}
	}
	inScheme := func(k string) {
		t.Helper()
		must("SCHEME.MOVE "+k, cl.Do(ctx, "SCHEME.MOVE", k, spec).Err())
	}
	// Strings: a cache library's calls.
	s := key("str")
	must("Set", cl.Set(ctx, s, "v1", 0).Err())
	inScheme(s)
	if old, err := cl.SetArgs(ctx, s, "v2", redis.SetArgs{Get: true}).Result(); err != nil || old != "v1" {
		t.Fatalf("%s: SET GET = %q, %v", spec, old, err)
	}
	if ok, err := cl.SetNX(ctx, s, "v3", 0).Result(); err != nil || ok {
		t.Fatalf("%s: SetNX on an existing key = %v, %v", spec, ok, err)
	}
	must("SetEx", cl.SetEx(ctx, s, "v4", 100_000_000_000).Err()) // go-redis sends whole seconds
	if v, err := cl.GetRange(ctx, s, 0, 0).Result(); err != nil || v != "v" {
		t.Fatalf("%s: GetRange = %q, %v", spec, v, err)
	}
	if n, err := cl.Append(ctx, s, "+tail").Result(); err != nil || n != 7 {
		t.Fatalf("%s: Append = %d, %v", spec, n, err)
	}
	if v, err := cl.Get(ctx, s).Result(); err != nil || v != "v4+tail" {
		t.Fatalf("%s: Get = %q, %v", spec, v, err)
	}
	// Hashes: a session store's calls.
	h := key("session")
	must("HSet map", cl.HSet(ctx, h, map[string]any{"user": "ada", "visits": 1, "score": 1.5}).Err())
	inScheme(h)
	if n, err := cl.HIncrBy(ctx, h, "visits", 41).Result(); err != nil || n != 42 {
		t.Fatalf("%s: HIncrBy = %d, %v", spec, n, err)
	}
	if f, err := cl.HIncrByFloat(ctx, h, "score", 0.25).Result(); err != nil || f != 1.75 {
		t.Fatalf("%s: HIncrByFloat = %v, %v", spec, f, err)
	}
	all, err := cl.HGetAll(ctx, h).Result()
	must("HGetAll", err)
	if want := map[string]string{"user": "ada", "visits": "42", "score": "1.75"}; !reflect.DeepEqual(all, want) {
		t.Fatalf("%s: HGetAll = %v, want %v", spec, all, want)
	}
	var sess struct {
		User   string  `redis:"user"`
		Visits int     `redis:"visits"`
		Score  float64 `redis:"score"`
	}
	must("HGetAll Scan", cl.HGetAll(ctx, h).Scan(&sess))
	if sess.User != "ada" || sess.Visits != 42 || sess.Score != 1.75 {
		t.Fatalf("%s: HGetAll into a struct = %+v", spec, sess)
	}
	vals, err := cl.HMGet(ctx, h, "user", "nope").Result()
	must("HMGet", err)
	if len(vals) != 2 || vals[0] != "ada" || vals[1] != nil {
		t.Fatalf("%s: HMGet = %v", spec, vals)
	}
	var scanned []string
	iter := cl.HScan(ctx, h, 0, "*", 10).Iterator()
	for iter.Next(ctx) {
		scanned = append(scanned, iter.Val())
	}
	must("HScan", iter.Err())
	if len(scanned) != 6 {
		t.Fatalf("%s: HScan iterated %v", spec, scanned)
	}
	fields, err := cl.HRandField(ctx, h, 2).Result()
	must("HRandField", err)
	if len(fields) != 2 || fields[0] == fields[1] {
		t.Fatalf("%s: HRandField 2 = %v", spec, fields)
	}
	if n, err := cl.HDel(ctx, h, "user", "visits", "score").Result(); err != nil || n != 3 {
		t.Fatalf("%s: HDel = %d, %v", spec, n, err)
	}
	if n, err := cl.Exists(ctx, h).Result(); err != nil || n != 0 {
		t.Fatalf("%s: the emptied hash exists: %d, %v", spec, n, err)
	}
	if err := cl.HGet(ctx, s, "f").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("%s: HGet on a string = %v", spec, err)
	}
	goRedisTransactions(ctx, t, cl, spec, key)
}

// goRedisTransactions: TxPipelined (MULTI/EXEC) over a string and a hash
// of one slot, and Watch's optimistic update, which a write between WATCH
// and EXEC makes fail with redis.TxFailedErr.
func goRedisTransactions(ctx context.Context, t *testing.T, cl *redis.ClusterClient, spec string, key func(string) string) {
	c, h := key("tx-counter"), key("tx-hash")
	if err := cl.Set(ctx, c, "10", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl.Do(ctx, "SCHEME.MOVE", c, spec)
	cmds, err := cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, c)
		p.HSet(ctx, h, "f", "v")
		p.HGet(ctx, h, "f")
		return nil
	})
	if err != nil || len(cmds) != 3 || cmds[0].(*redis.IntCmd).Val() != 11 || cmds[2].(*redis.StringCmd).Val() != "v" {
		t.Fatalf("%s: TxPipelined = %v, %v", spec, cmds, err)
	}
	incrBy := func(delta int64, meddle bool) error {
		return cl.Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.Get(ctx, c).Int64()
			if err != nil {
				return err
			}
			if meddle { // another client writes the watched key
				cl.Set(ctx, c, "100", 0)
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, c, n+delta, 0)
				return nil
			})
			return err
		}, c)
	}
	if err := incrBy(5, false); err != nil {
		t.Fatalf("%s: Watch: %v", spec, err)
	}
	if err := incrBy(5, true); err != redis.TxFailedErr {
		t.Fatalf("%s: Watch with a write in between = %v, want TxFailedErr", spec, err)
	}
	if v, _ := cl.Get(ctx, c).Result(); v != "100" {
		t.Fatalf("%s: after the aborted transaction the counter is %q, want the other client's 100", spec, v)
	}
}

// checkPyResults compares what drivers.py saw on one scheme with what
// Redis answers.
func checkPyResults(t *testing.T, spec string, res map[string]any) {
	t.Helper()
	want := map[string]any{
		"set_get_old": "v1", "setnx_existing": false, "getrange": "v", "append": 7.0, "get": "v4+tail",
		"hincrby": 42.0, "hincrbyfloat": 1.75, "hgetall": map[string]any{"user": "ada", "visits": "42", "score": "1.75"},
		"hmget": []any{"ada", nil}, "hscan_fields": 3.0, "hrandfield_distinct": true, "hdel": 3.0, "exists_after_hdel": 0.0,
		"hget_on_string": "WRONGTYPE", "plain_hgetall": map[string]any{"a": "1"}, "plain_type": "hash",
		"cluster_tx": []any{11.0, 1.0, "v"}, "plain_tx": []any{1.0, 2.0}, "watch_ok": 15.0, "watch_aborted": "WatchError",
		"after_watch": "100",
	}
	for k, w := range want {
		if g, ok := res[k]; !ok || !reflect.DeepEqual(g, w) {
			t.Errorf("redis-py on %s: %s = %#v, want %#v", spec, k, res[k], w)
		}
	}
	var keys []string
	for k := range res {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	if slices.Sort(keys); len(keys) > 0 {
		t.Errorf("redis-py on %s: results not checked: %v", spec, keys)
	}
}

// runPyClient runs tests/pyclient/SCRIPT HOST PORT ARGS... against node 0
// of c through the interpreter MEMGEST_TEST_PYTHON names (`make test` sets
// it to a venv with a pinned redis-py; scripts/test-deps.sh makes one) and
// returns the JSON object it printed.
func runPyClient(t *testing.T, c *testCluster, script string, args ...string) map[string]json.RawMessage {
	t.Helper()
	py := os.Getenv("MEMGEST_TEST_PYTHON")
	if py == "" {
		msg := "MEMGEST_TEST_PYTHON is not set: run `make test`, or `export MEMGEST_TEST_PYTHON=$(scripts/test-deps.sh)` (`make test-deps` prints it) for the redis-py venv"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	host, port := "127.0.0.1", strconv.Itoa(c.nodes[0].port)
	cmd := exec.Command(py, append([]string{"pyclient/" + script, host, port}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, stderr.String())
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s printed %q: %v", script, out, err)
	}
	t.Logf("redis-py %s", got["redis_py"])
	return got
}
