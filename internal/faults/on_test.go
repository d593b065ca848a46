//go:build failpoints

package faults

import (
	"errors"
	"net"
	"testing"
	"time"
)

func TestArmRefusesUnknownPointsAndActions(t *testing.T) {
	for _, c := range [][2]string{{"no.such.point", "crash"}, {BeforeCommit, "explode"}, {BeforeCommit, "sleep:-1s"}, {BeforeCommit, "sleep:x"}} {
		if err := Arm(c[0], c[1]); err == nil {
			t.Errorf("Arm(%q, %q) accepted", c[0], c[1])
		}
	}
	if armed.Load() {
		t.Fatal("a refused Arm armed something")
	}
}

func TestSleepAndOn(t *testing.T) {
	if err := Arm(BeforeCommit, "sleep:30ms"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	Hit(BeforeCommit)
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("Hit of a sleep:30ms point returned after %s", d)
	}
	Hit(AfterCommit) // not armed: no wait
	if Active(BugEarlyAck) {
		t.Fatal("an unarmed bug is active")
	}
	must(t, Arm(BugEarlyAck, "on"))
	if !Active(BugEarlyAck) {
		t.Fatal("an armed bug is not active")
	}
	must(t, Arm(BugEarlyAck, "off"))
	must(t, Arm(BeforeCommit, "off"))
	if armed.Load() || Active(BugEarlyAck) {
		t.Fatal("disarming left something armed")
	}
}

// TestDropCutsOpenAndNewConnections: dropping a link fails the connections
// already open to the address, both ways, and refuses new ones until ok.
func TestDropCutsOpenAndNewConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { // echo
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						c.Close()
						return
					}
					c.Write(buf[:n])
				}
			}()
		}
	}()
	addr := l.Addr().String()
	dial := func() (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		must(t, err)
		return Wrap(c, addr)
	}
	c, err := dial()
	must(t, err)
	echo := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		c.SetReadDeadline(time.Now().Add(time.Second))
		_, err := c.Read(buf)
		return err
	}
	must(t, echo(c))
	blocked := make(chan error, 1)
	go func() { // a reader waiting when the link drops
		buf := make([]byte, 4)
		c.SetReadDeadline(time.Time{})
		_, err := c.Read(buf)
		blocked <- err
	}()
	time.Sleep(20 * time.Millisecond)
	must(t, SetLink(addr, "drop"))
	select {
	case err := <-blocked:
		if err == nil {
			t.Fatal("a read waiting on a dropped link succeeded")
		}
	case <-time.After(time.Second):
		t.Fatal("a read waiting on a dropped link still waits")
	}
	if _, err := dial(); !errors.Is(err, errDropped) {
		t.Fatalf("dial on a dropped link = %v", err)
	}
	must(t, SetLink(addr, "delay:40ms"))
	c2, err := dial()
	must(t, err)
	start := time.Now()
	must(t, echo(c2))
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("an echo over a 40 ms delayed link took %s", d)
	}
	must(t, SetLink(addr, "ok"))
	must(t, echo(c2))
	if err := SetLink(addr, "sideways"); err == nil {
		t.Fatal("an unknown link fault was accepted")
	}
	c2.Close()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
