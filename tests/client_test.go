package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lineConn is a raw client connection that reads single-line replies.
type lineConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return &lineConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// do sends an inline command and returns its first reply line, or the read
// error's text.
func (c *lineConn) do(cmd string) string {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "write: " + err.Error()
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimRight(line, "\r\n")
}

// bulk sends an inline command and returns its bulk reply's text, or the
// texts of an array reply's bulk strings, one a line.
func (c *lineConn) bulk(cmd string) string {
	c.t.Helper()
	first := c.do(cmd)
	switch {
	case strings.HasPrefix(first, "$"):
		return c.bulkText(first)
	case strings.HasPrefix(first, "*"):
		n, err := strconv.Atoi(first[1:])
		must(c.t, err)
		parts := make([]string, n)
		for i := range parts {
			header, err := c.r.ReadString('\n')
			must(c.t, err)
			parts[i] = c.bulkText(strings.TrimRight(header, "\r\n"))
		}
		return strings.Join(parts, "\n")
	}
	c.t.Fatalf("%s: reply %q", cmd, first)
	return ""
}

// bulkText reads the payload of the bulk string whose header line was
// header ("$5").
func (c *lineConn) bulkText(header string) string {
	c.t.Helper()
	n, err := strconv.Atoi(header[1:])
	if err != nil || n < 0 {
		c.t.Fatalf("bulk header %q", header)
	}
	buf := make([]byte, n+2)
	_, err = io.ReadFull(c.r, buf)
	must(c.t, err)
	return string(buf[:n])
}

// TestClientKill covers CLIENT KILL's old and filter forms, SKIPME, errors
// that change nothing, and CLIENT HELP.
func TestClientKill(t *testing.T) {
	c := startCluster(t, 1, clusterOptions{})
	addr := c.nodes[0].addr()
	victim, killer := dialLine(t, addr), dialLine(t, addr)
	id := strings.TrimPrefix(victim.do("CLIENT ID"), ":")

	for cmd, want := range map[string]string{
		"CLIENT KILL ID 0":                      "-ERR client-id should be greater than 0",
		"CLIENT KILL ID " + id + " BOGUS x":     "-ERR syntax error",
		"CLIENT KILL ID":                        "-ERR No such client", // the old form, as in Redis
		"CLIENT KILL TYPE nosuch":               "-ERR Unknown client type 'nosuch'",
		"CLIENT KILL 127.0.0.1:1":               "-ERR No such client",
		"CLIENT KILL ID " + id + " TYPE pubsub": ":0",
	} {
		if got := killer.do(cmd); got != want {
			t.Errorf("%s = %q, want %q", cmd, got, want)
		}
	}
	if got := victim.do("PING"); got != "+PONG" {
		t.Fatalf("a refused CLIENT KILL closed the client: %q", got)
	}
	if got := killer.do("CLIENT KILL ID " + id); got != ":1" {
		t.Fatalf("CLIENT KILL ID = %q", got)
	}
	if got := victim.do("PING"); !strings.HasPrefix(got, "read:") && !strings.HasPrefix(got, "write:") {
		t.Fatalf("killed client still answered %q", got)
	}

	// Old form by address, then SKIPME: the killer survives its own kill
	// unless it says SKIPME no, and then gets its reply first.
	other := dialLine(t, addr)
	other.do("PING")
	otherAddr := other.conn.LocalAddr().String()
	if got := killer.do("CLIENT KILL " + otherAddr); got != "+OK" {
		t.Fatalf("CLIENT KILL %s = %q", otherAddr, got)
	}
	if got := other.do("PING"); !strings.HasPrefix(got, "read:") && !strings.HasPrefix(got, "write:") {
		t.Fatalf("client killed by address still answered %q", got)
	}
	self := killer.conn.LocalAddr().String()
	if got := killer.do("CLIENT KILL ADDR " + self); got != ":0" {
		t.Fatalf("CLIENT KILL ADDR self (SKIPME yes) = %q", got)
	}
	if got := killer.do(fmt.Sprintf("CLIENT KILL ADDR %s SKIPME no", self)); got != ":1" {
		t.Fatalf("CLIENT KILL ADDR self SKIPME no = %q", got)
	}
	if got := killer.do("PING"); !strings.HasPrefix(got, "read:") && !strings.HasPrefix(got, "write:") {
		t.Fatalf("self-killed client still answered %q", got)
	}
	if got := dialLine(t, addr).do("CLIENT HELP"); !strings.HasPrefix(got, "*") {
		t.Fatalf("CLIENT HELP = %q", got)
	}
}

// TestMaxClients starts a node with --maxclients 5: five connections are
// served, the sixth is answered Redis's error and closed and counted in
// INFO and /metrics, and once one of the five closes a new one is served.
func TestMaxClients(t *testing.T) {
	c := startCluster(t, 1, clusterOptions{extra: []string{"--maxclients", "5"}})
	addr := c.nodes[0].addr()
	conns := make([]*lineConn, 5)
	for i := range conns {
		conns[i] = dialLine(t, addr)
		if got := conns[i].do("PING"); got != "+PONG" {
			t.Fatalf("connection %d of 5: PING = %q", i+1, got)
		}
	}
	sixth := dialLine(t, addr)
	if got, err := sixth.r.ReadString('\n'); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("sixth connection read %q, %v", got, err)
	}
	if got, err := sixth.r.ReadString('\n'); err == nil {
		t.Fatalf("sixth connection stayed open: %q", got)
	}
	info := conns[0].bulk("INFO")
	for _, want := range []string{"connected_clients:5\r\n", "maxclients:5\r\n", "rejected_connections:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	if got := conns[0].bulk("CONFIG GET maxclients"); got != "maxclients\n5" {
		t.Errorf("CONFIG GET maxclients = %q", got)
	}
	if m := c.metrics(0); !strings.Contains(m, "\nmemgest_rejected_connections_total 1\n") {
		t.Errorf("/metrics lacks memgest_rejected_connections_total 1:\n%s", m)
	}

	conns[4].conn.Close()
	for !strings.Contains(conns[0].bulk("INFO clients"), "connected_clients:4\r\n") {
		time.Sleep(10 * time.Millisecond) // until the node has seen the close
	}
	if got := dialLine(t, addr).do("PING"); got != "+PONG" {
		t.Fatalf("a connection after one closed: PING = %q", got)
	}
}

// TestArityAsRedis checks commands whose arity the table gives as Redis
// does (-1, -2) but whose handlers bound the arguments further, as
// Redis's do: PING takes at most one argument, CLIENT LIST only its TYPE
// and ID filters.
func TestArityAsRedis(t *testing.T) {
	c := startCluster(t, 1, clusterOptions{})
	conn := dialLine(t, c.nodes[0].addr())
	id := strings.TrimPrefix(conn.do("CLIENT ID"), ":")
	for cmd, want := range map[string]string{
		"PING":                      "+PONG",
		"PING a b c":                "-ERR wrong number of arguments for 'ping' command",
		"PING a b":                  "-ERR wrong number of arguments for 'ping' command",
		"CLIENT LIST a":             "-ERR syntax error",
		"CLIENT LIST TYPE":          "-ERR syntax error",
		"CLIENT LIST TYPE x":        "-ERR Unknown client type 'x'",
		"CLIENT LIST ID x":          "-ERR Invalid client ID",
		"CLIENT LIST TYPE normal x": "-ERR syntax error",
	} {
		if got := conn.do(cmd); got != want {
			t.Errorf("%s = %q, want %q", cmd, got, want)
		}
	}
	if got := conn.bulk("PING a"); got != "a" {
		t.Errorf("PING a = %q", got)
	}
	for cmd, want := range map[string]int{
		"CLIENT LIST":                 1,
		"CLIENT LIST TYPE normal":     1,
		"CLIENT LIST TYPE pubsub":     0,
		"CLIENT LIST ID " + id:        1,
		"CLIENT LIST ID 999999 " + id: 1,
		"CLIENT LIST ID 999999":       0,
	} {
		if got := strings.Count(conn.bulk(cmd), "id="+id+" "); got != want {
			t.Errorf("%s lists this client %d times, want %d", cmd, got, want)
		}
	}
}
