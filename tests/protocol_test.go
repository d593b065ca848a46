package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rawExchange writes raw bytes to a node and returns the first reply line.
func rawExchange(t *testing.T, addr, request string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading reply to %q: %v", request, err)
	}
	return strings.TrimRight(line, "\r\n")
}

// TestBadInputChangesNothing sends malformed protocol, unknown commands,
// wrong arities and bad scheme requests; each gets a Redis-style error and
// no key appears (DESIGN.md §8 invariant 6).
func TestBadInputChangesNothing(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--max-value-size", "1048576", "--max-args", "1000"}})
	addr := c.nodes[1].addr()
	for _, tc := range []struct{ req, want string }{
		{"*2\r\n$3\r\nGET\r\n$99999999999\r\n", "-ERR Protocol error: invalid bulk length"},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n", "-ERR Protocol error: invalid bulk length"},
		{"*100000\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"*2\r\n$3\r\nGET\r\n+oops\r\n", "-ERR Protocol error: expected '$', got '+'"},
		{"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length"},
		{"*1\r\n$4\r\nFOOB\r\n", "-ERR unknown command 'FOOB', with args beginning with: "},
		{"*1\r\n$3\r\nGET\r\n", "-ERR wrong number of arguments for 'get' command"},
		{"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nXY\r\n", "-ERR syntax error"},
		{"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$6\r\nSCHEME\r\n$9\r\nsplit:9+9\r\n", "-ERR"},
		{"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$6\r\nSCHEME\r\n$7\r\nnosuchx\r\n", "-ERR"},
		{"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$6\r\nSCHEME\r\n$5\r\nrep:0\r\n", "-ERR"},
		{"*3\r\n$13\r\nSCHEME.CREATE\r\n$4\r\nnone\r\n$5\r\nrep:2\r\n", "-ERR"},
		{"*2\r\n$11\r\nSCHEME.DROP\r\n$4\r\nnone\r\n", "-ERR"},
		{"*3\r\n$11\r\nSCHEME.MOVE\r\n$1\r\nk\r\n$5\r\nrep:2\r\n", "-ERR no such key"},
		{"*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n", "-ERR SELECT is not allowed in cluster mode"},
		{"*3\r\n$6\r\nINCRBY\r\n$1\r\nk\r\n$3\r\n1.5\r\n", "-ERR value is not an integer or out of range"},
	} {
		got := rawExchange(t, addr, tc.req)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: got %q, want prefix %q", tc.req, got, tc.want)
		}
	}
	rdb := c.plainClient(0, 2)
	ctx := ctxT(t)
	if n := dbsizeCluster(t, ctx, rdb); n != 0 {
		t.Fatalf("bad input created %d keys", n)
	}
	if err := rdb.Do(ctx, "SET", "k", "v", "SCHEME", "split:9+9").Err(); err == nil || !strings.Contains(err.Error(), "nodes") {
		t.Fatalf("unplaceable scheme: %v (want an error naming the node count)", err)
	}
	// A scheme in use cannot be dropped; once unused it can.
	must(t, rdb.Do(ctx, "SCHEME.CREATE", "hot", "rep:2").Err())
	must(t, rdb.Do(ctx, "SET", "hk", "v", "SCHEME", "hot").Err())
	if err := rdb.Do(ctx, "SCHEME.DROP", "hot").Err(); err == nil || !strings.Contains(err.Error(), "used by 1 keys") {
		t.Fatalf("drop of a used scheme: %v", err)
	}
	must(t, rdb.Do(ctx, "SCHEME.MOVE", "hk", "none").Err())
	must(t, rdb.Do(ctx, "SCHEME.DROP", "hot").Err())
	if v := rdb.Get(ctx, "hk").Val(); v != "v" {
		t.Fatalf("value after move and drop: %q", v)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedirectMode checks that --redirect answers -MOVED like Redis Cluster
// and that a cluster client follows it.
func TestRedirectMode(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{redirect: true})
	ctx := ctxT(t)
	moved := 0
	for i := 0; i < 20; i++ {
		err := c.plainClient(0, 2).Set(ctx, fmt.Sprintf("r%d", i), "v", 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
			moved++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if moved == 0 {
		t.Fatal("no key was redirected from node 0 of 3")
	}
	cc := c.clusterClient()
	for i := 0; i < 20; i++ {
		k := fmt.Sprintf("r%d", i)
		must(t, cc.Set(ctx, k, k, 0).Err())
		if v := cc.Get(ctx, k).Val(); v != k {
			t.Fatalf("cluster client read %q for %s", v, k)
		}
	}
}

// TestClusterClient drives the commands through go-redis's ClusterClient,
// which routes by CLUSTER SLOTS itself.
func TestClusterClient(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	cc := c.clusterClient()
	ctx := ctxT(t)
	for i := 0; i < 60; i++ {
		k, sch := fmt.Sprintf("cc:%d", i), schemes[i%len(schemes)]
		must(t, cc.Do(ctx, "SET", k, k, "SCHEME", sch).Err())
	}
	for i := 0; i < 60; i++ {
		k := fmt.Sprintf("cc:%d", i)
		if v := cc.Get(ctx, k).Val(); v != k {
			t.Fatalf("GET %s = %q", k, v)
		}
		if n := cc.Incr(ctx, k+":n").Val(); n != 1 {
			t.Fatalf("INCR = %d", n)
		}
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	must(t, err)
	covered := 0
	for _, s := range slots {
		covered += s.End - s.Start + 1
	}
	if covered != 16384 || len(slots) != 6 {
		t.Fatalf("CLUSTER SLOTS covers %d slots in %d ranges", covered, len(slots))
	}
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Ping(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	t.Run("pubsub", func(t *testing.T) { checkPubSub(t, c) })
}

// TestAuthAndLimits covers requirepass, maxmemory's -OOM and INFO fields.
func TestAuthAndLimits(t *testing.T) {
	c := startCluster(t, 1, clusterOptions{pass: "s3cret", extra: []string{"--maxmemory", "1"}})
	ctx := ctxT(t)
	anon := redis.NewClient(&redis.Options{Addr: c.nodes[0].addr(), DisableIdentity: true})
	defer anon.Close()
	if err := anon.Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("unauthenticated GET: %v", err)
	}
	bad := redis.NewClient(&redis.Options{Addr: c.nodes[0].addr(), Password: "wrong", DisableIdentity: true})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v", err)
	}
	good := redis.NewClient(&redis.Options{Addr: c.nodes[0].addr(), Password: "s3cret", DisableIdentity: true})
	defer good.Close()
	time.Sleep(300 * time.Millisecond) // let the memory gauge see the node's slabs
	if err := good.Set(ctx, "k", strings.Repeat("x", 1000), 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("write beyond maxmemory: %v", err)
	}
	if got := rawExchange(t, c.nodes[0].addr(), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20000\r\n"); got != "-ERR Protocol error: unauthenticated bulk length" {
		t.Fatalf("large request before AUTH: %q", got)
	}
	info := good.Info(ctx, "server").Val()
	for _, field := range []string{"process_id:", "tcp_port:", "run_id:", "redis_version:"} {
		if !strings.Contains(info, field) {
			t.Errorf("INFO server lacks %s", field)
		}
	}
}
