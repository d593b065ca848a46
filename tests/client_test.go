package tests

import (
	"bufio"
	"fmt"
	"net"
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
