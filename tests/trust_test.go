package tests

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/certs"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/transport"
	"github.com/redis/go-redis/v9"
)

// The trust tests (DESIGN.md §7c, issue 23 items 1–3): nothing reaches a
// node's peer port without the cluster secret, the clients' password is
// the cluster's, the HTTP port hides /status and profiles, and TLS works
// end to end through a failover.

// msgPropose is server/peer_messages.go's "ask the leader to apply a map
// command" frame type, which a stranger would forge to change the map.
const msgPropose = 6

// launchStranger starts a memgest process that is not one of c's nodes
// (it is killed when the test ends) and returns it.
func (c *testCluster) launchStranger(extra ...string) *node {
	c.t.Helper()
	ports := freePorts(c.t, 3)
	nd := &node{port: ports[0], peerPort: ports[1], httpPort: ports[2], log: &syncBuffer{}}
	nd.args = append([]string{"server", "--bind", "127.0.0.1", "--port", strconv.Itoa(nd.port),
		"--peer-port", strconv.Itoa(nd.peerPort), "--http-port", strconv.Itoa(nd.httpPort),
		"--data-dir", c.t.TempDir(), "--join", c.nodes[0].peerAddr()}, extra...)
	c.launch(nd)
	c.t.Cleanup(func() {
		_ = nd.cmd.Process.Kill()
		<-nd.done
		if c.t.Failed() {
			c.t.Logf("log of the stranger:\n%s", nd.log.String())
		}
	})
	return nd
}

// exitsWith waits for nd's process to exit and checks its log says want.
func exitsWith(t *testing.T, nd *node, want string) {
	t.Helper()
	select {
	case <-nd.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the process did not exit; log:\n%s", nd.log.String())
	}
	if !strings.Contains(nd.log.String(), want) {
		t.Fatalf("log lacks %q:\n%s", want, nd.log.String())
	}
}

// authFailures reads memgest_auth_failures_total{kind} from node i.
func (c *testCluster) authFailures(i int, kind string) int {
	c.t.Helper()
	re := regexp.MustCompile(`(?m)^memgest_auth_failures_total\{kind="` + kind + `"\} (\d+)`)
	m := re.FindStringSubmatch(c.metrics(i))
	if m == nil {
		c.t.Fatalf("node %d has no memgest_auth_failures_total{kind=%q}", i, kind)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// rawRaftStream dials a peer port as Raft's stream layer did before peers
// had to prove the secret: a 'R' tag, then Raft's own bytes.
type rawRaftStream struct{ net.Listener }

func (s rawRaftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	_, err = c.Write([]byte{transport.TagRaft})
	return c, err
}

// A forged Raft AppendEntries with a huge term, a forged map change and a
// node without the secret (or with another) change nothing.
func TestPeerPortRefusesStrangers(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{})
	leader := c.leader(0)
	before, err := c.status(0)
	must(t, err)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	trans := raft.NewNetworkTransport(rawRaftStream{l}, 1, 2*time.Second, io.Discard)
	defer trans.Close()
	for i, nd := range c.nodes {
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("intruder"), Addr: []byte(l.Addr().String())},
			Term: 1_000_000_000, Leader: []byte(l.Addr().String())}
		var out raft.AppendEntriesResponse
		err := trans.AppendEntries(raft.ServerID(before.Nodes[i].ID), raft.ServerAddress(nd.peerAddr()), req, &out)
		if err == nil {
			t.Errorf("node %d answered a forged AppendEntries (term %d, success %v)", i, out.Term, out.Success)
		}
	}

	stranger := transport.Dial(c.nodes[leader].peerAddr())
	defer stranger.Close()
	cmd, err := cluster.EncodeCommand(cluster.CreateScheme{Alias: "intruder", Spec: scheme.Spec{Kind: scheme.Rep, R: 2}})
	must(t, err)
	if _, err := stranger.Call(ctxT(t), transport.Frame{Type: msgPropose, Epoch: before.Epoch, Payload: cmd}); err == nil {
		t.Error("a stranger's map change was answered")
	}

	exitsWith(t, c.launchStranger(), "--cluster-secret-file")
	wrong := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(wrong, []byte("not the cluster's secret at all\n"), 0o600))
	refusedBefore := c.authFailures(0, "peer")
	c.launchStranger("--cluster-secret-file", wrong)
	for deadline := time.Now().Add(30 * time.Second); c.authFailures(0, "peer") == refusedBefore; { // until it tried to join
		if time.Now().After(deadline) {
			t.Fatal("no refusal counted for a node with the wrong secret trying to join")
		}
		time.Sleep(50 * time.Millisecond)
	}

	after, err := c.status(0)
	must(t, err)
	if c.leader(0) != leader || after.Epoch != before.Epoch || len(after.Nodes) != 3 {
		t.Fatalf("the cluster changed: leader %d→%d, epoch %d→%d, %d nodes", leader, c.leader(0), before.Epoch, after.Epoch, len(after.Nodes))
	}
	if err := c.plainClient(0, 2).Do(ctxT(t), "SCHEME.INFO", "intruder").Err(); err == nil {
		t.Fatal("the stranger's scheme exists")
	}
	for i := range c.nodes {
		if c.authFailures(i, "peer") == 0 {
			t.Errorf("node %d counted no refused peer connection", i)
		}
	}
}

// The founding node's --requirepass is the cluster's: a node started
// without it asks for it, CONFIG SET changes it everywhere, and a node
// started with another one refuses to run.
func TestPasswordIsClusterConfiguration(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{pass: "s3cret"})
	ctx := ctxT(t)
	anon := redis.NewClient(&redis.Options{Addr: c.nodes[2].addr(), DisableIdentity: true})
	defer anon.Close()
	if err := anon.Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("GET without AUTH on a node started without --requirepass: %v", err)
	}
	if err := anon.Do(ctx, "AUTH", "guess").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v", err)
	}
	rdb := c.plainClient(2, 2)
	must(t, rdb.Set(ctx, "k", "v", 0).Err())

	for path, want := range map[string]int{"/status": 401, "/metrics": 200, "/debug/pprof/": 404} {
		resp, err := c.httpGet(2, path, "")
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without the password: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if c.authFailures(2, "client") == 0 || c.authFailures(2, "http") == 0 {
		t.Error("refused credentials were not counted")
	}

	must(t, c.plainClient(1, 2).ConfigSet(ctx, "requirepass", "n3w").Err())
	waitAuth(t, c.nodes[2].addr(), "n3w", "s3cret")
	c.pass = "n3w"
	if _, err := c.status(2); err != nil {
		t.Fatalf("/status with the new password: %v", err)
	}
	if got := c.plainClient(2, 2).ConfigGet(ctx, "requirepass").Val()["requirepass"]; got == "n3w" || got == "" {
		t.Errorf("CONFIG GET requirepass = %q: want it masked", got)
	}
	exitsWith(t, c.launchStranger("--cluster-secret-file", c.secret, "--requirepass", "n3w-but-not"), "not the cluster's password")
}

// waitAuth waits until addr accepts pass and refuses old.
func waitAuth(t *testing.T, addr, pass, old string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cl := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		newErr := cl.Do(ctxT(t), "AUTH", pass).Err()
		oldErr := cl.Do(ctxT(t), "AUTH", old).Err()
		cl.Close()
		if newErr == nil && oldErr != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: AUTH new %v, AUTH old %v", addr, newErr, oldErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Profiles are served only with --enable-pprof, and then behind the
// password.
func TestPprofNeedsFlagAndPassword(t *testing.T) {
	c := startCluster(t, 1, clusterOptions{pass: "s3cret", extra: []string{"--enable-pprof"}})
	for pass, want := range map[string]int{"": 401, "wrong": 401, "s3cret": 200} {
		resp, err := c.httpGet(0, "/debug/pprof/", pass)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("pprof with password %q: %d, want %d", pass, resp.StatusCode, want)
		}
	}
}

// With TLS on, clients need a certificate of the CA, plaintext gets
// nothing, and the cluster fails a node over and serves every key, its
// peers talking mutual TLS.
func TestTLSClusterFailover(t *testing.T) {
	files, err := certs.WriteDev(t.TempDir(), []string{"127.0.0.1", "localhost"})
	must(t, err)
	c := startCluster(t, 4, clusterOptions{tls: &files})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	want := map[string]string{}
	for i := range 200 {
		k, v := fmt.Sprintf("tls:%d", i), fmt.Sprintf("value %d", i)
		sch := []string{"rep:3", "split:2+1"}[i%2]
		must(t, rdb.Do(ctx, "SET", k, v, "SCHEME", sch).Err())
		want[k] = v
	}

	if line := plaintextPing(t, c.nodes[0].addr()); strings.Contains(line, "PONG") {
		t.Fatal("a plaintext client was answered")
	}
	noCert := c.tls.Clone()
	noCert.Certificates = nil
	if conn, err := tls.Dial("tcp", c.nodes[0].addr(), noCert); err == nil {
		_, err = conn.Write([]byte("PING\r\n"))
		if err == nil {
			_, err = bufio.NewReader(conn).ReadString('\n')
		}
		conn.Close()
		if err == nil {
			t.Fatal("a client without a certificate was served")
		}
	}

	victim := c.nonVoters()[0]
	from := (victim + 1) % len(c.nodes)
	must(t, c.nodes[victim].cmd.Process.Kill())
	c.waitFailed(from, victim, 60*time.Second)
	waitRecovered(t, c.plainClient(from, 2), want)
}

// plaintextPing sends PING without TLS and returns what came back before
// the node hung up.
func plaintextPing(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	must(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("PING\r\n"))
	b, _ := io.ReadAll(conn)
	return string(b)
}

// Every port, the HTTP one included, listens on --bind only.
func TestPortsListenOnBindOnly(t *testing.T) {
	ports := freePorts(t, 3)
	nd := &node{port: ports[0], peerPort: ports[1], httpPort: ports[2], log: &syncBuffer{}}
	nd.args = []string{"server", "--bind", "127.0.0.2", "--port", strconv.Itoa(nd.port), "--peer-port", strconv.Itoa(nd.peerPort),
		"--http-port", strconv.Itoa(nd.httpPort), "--data-dir", t.TempDir(), "--bootstrap-expect", "1", "--voters", "1"}
	c := &testCluster{t: t}
	c.launch(nd)
	t.Cleanup(func() { _ = nd.cmd.Process.Kill(); <-nd.done })
	for _, p := range ports {
		bound := "127.0.0.2:" + strconv.Itoa(p)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if conn, err := net.DialTimeout("tcp", bound, time.Second); err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("nothing listens on %s:\n%s", bound, nd.log.String())
			}
		}
		if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p), time.Second); err == nil {
			conn.Close()
			t.Errorf("port %d answers on 127.0.0.1 with --bind 127.0.0.2", p)
		}
	}
}
