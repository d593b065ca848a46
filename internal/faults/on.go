//go:build failpoints

package faults

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Built says whether this binary was built with the failpoints tag.
const Built = true

// action is what an armed failpoint does.
type action struct {
	kind  string // crash, sleep, on
	sleep time.Duration
}

var (
	armed  atomic.Bool // any failpoint armed: Hit's fast path
	mu     sync.Mutex
	points = map[string]action{}
)

// Hit runs the action armed at the failpoint name, if any.
func Hit(name string) {
	if !armed.Load() {
		return
	}
	mu.Lock()
	a, ok := points[name]
	mu.Unlock()
	if !ok {
		return
	}
	switch a.kind {
	case "crash":
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered before this goroutine runs on
	case "sleep":
		time.Sleep(a.sleep)
	}
}

// Active says whether the failpoint name is armed "on".
func Active(name string) bool {
	if !armed.Load() {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	return points[name].kind == "on"
}

// Armed says whether the failpoint name has any action armed, for a
// point that must prepare before Hit (StripeBetweenHolders).
func Armed(name string) bool {
	if !armed.Load() {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	_, ok := points[name]
	return ok
}

// Arm sets the action of the failpoint name: crash, sleep:<duration>, on
// or off. Unknown names are refused, so that a test cannot arm a point the
// server never hits.
func Arm(name, spec string) error {
	if name != BugEarlyAck && !known(name) {
		return fmt.Errorf("faults: no failpoint %q (have %s, %s)", name, strings.Join(Points, ", "), BugEarlyAck)
	}
	a, err := parseAction(spec)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if a.kind == "off" {
		delete(points, name)
	} else {
		points[name] = a
	}
	armed.Store(len(points) > 0)
	return nil
}

func known(name string) bool {
	for _, p := range Points {
		if p == name {
			return true
		}
	}
	return false
}

func parseAction(spec string) (action, error) {
	switch {
	case spec == "crash", spec == "on", spec == "off":
		return action{kind: spec}, nil
	case strings.HasPrefix(spec, "sleep:"):
		d, err := time.ParseDuration(strings.TrimPrefix(spec, "sleep:"))
		if err != nil || d <= 0 {
			return action{}, fmt.Errorf("faults: bad sleep in %q: want sleep:<positive duration>", spec)
		}
		return action{kind: "sleep", sleep: d}, nil
	}
	return action{}, fmt.Errorf("faults: unknown action %q: want crash, sleep:<duration>, on or off", spec)
}

// link is the fault on the connections to one peer address.
type link struct {
	drop  bool
	delay time.Duration
	conns map[*faultyConn]struct{}
}

var (
	linkMu sync.Mutex
	links  = map[string]*link{}
)

// errDropped is what a connection on a dropped link fails with.
var errDropped = errors.New("faults: link dropped (partition)")

// SetLink sets the fault on this node's links to addr: drop, delay:<d> or
// ok. Dropping closes the connections already open to addr.
func SetLink(addr, spec string) error {
	l := link{}
	switch {
	case spec == "ok":
	case spec == "drop":
		l.drop = true
	case strings.HasPrefix(spec, "delay:"):
		d, err := time.ParseDuration(strings.TrimPrefix(spec, "delay:"))
		if err != nil || d <= 0 {
			return fmt.Errorf("faults: bad delay in %q: want delay:<positive duration>", spec)
		}
		l.delay = d
	default:
		return fmt.Errorf("faults: unknown link fault %q: want drop, delay:<duration> or ok", spec)
	}
	linkMu.Lock()
	cur := linkOf(addr)
	cur.drop, cur.delay = l.drop, l.delay
	var doomed []*faultyConn
	if cur.drop {
		for c := range cur.conns {
			doomed = append(doomed, c)
		}
	}
	linkMu.Unlock()
	for _, c := range doomed {
		c.Conn.Close()
	}
	return nil
}

// linkOf returns addr's link record; the caller holds linkMu.
func linkOf(addr string) *link {
	l := links[addr]
	if l == nil {
		l = &link{conns: map[*faultyConn]struct{}{}}
		links[addr] = l
	}
	return l
}

// Wrap puts c, a connection this node dialled to addr, under addr's link
// fault. On a dropped link it closes c and fails.
func Wrap(c net.Conn, addr string) (net.Conn, error) {
	linkMu.Lock()
	defer linkMu.Unlock()
	l := linkOf(addr)
	if l.drop {
		c.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, errDropped)
	}
	fc := &faultyConn{Conn: c, link: l}
	l.conns[fc] = struct{}{}
	return fc, nil
}

// faultyConn is a dialled connection under its link's fault.
type faultyConn struct {
	net.Conn
	link *link
}

// state reads the link's fault.
func (c *faultyConn) state() (drop bool, delay time.Duration) {
	linkMu.Lock()
	defer linkMu.Unlock()
	return c.link.drop, c.link.delay
}

func (c *faultyConn) Read(p []byte) (int, error) {
	if drop, _ := c.state(); drop {
		return 0, errDropped
	}
	return c.Conn.Read(p)
}

func (c *faultyConn) Write(p []byte) (int, error) {
	drop, delay := c.state()
	if delay > 0 {
		time.Sleep(delay)
		drop, _ = c.state()
	}
	if drop {
		return 0, errDropped
	}
	return c.Conn.Write(p)
}

func (c *faultyConn) Close() error {
	linkMu.Lock()
	delete(c.link.conns, c)
	linkMu.Unlock()
	return c.Conn.Close()
}
