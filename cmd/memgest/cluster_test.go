package main

import (
	"bufio"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeNode answers RESP commands as a memgest node would to `memgest
// cluster`: +OK to NODE.DRAIN and REBALANCE, an error to anything else
// (go-redis then falls back from HELLO), and records what it was sent.
type fakeNode struct {
	addr string
	mu   sync.Mutex
	sent [][]string
}

func startFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakeNode{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeNode) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		reply := "-ERR unknown command\r\n"
		if name := strings.ToUpper(args[0]); name == "NODE.DRAIN" || name == "REBALANCE" {
			f.mu.Lock()
			f.sent = append(f.sent, args)
			f.mu.Unlock()
			reply = "+OK\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 || line[0] != '*' {
		return nil, io.ErrUnexpectedEOF
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		head, err := r.ReadString('\n')
		if err != nil || head[0] != '$' {
			return nil, io.ErrUnexpectedEOF
		}
		size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestRemoveNodeAppliesRateAndParallel: `memgest cluster remove-node` with
// --rate or --parallel drains the node, then sets the drain's rebalance to
// that pace; without them it only drains.
func TestRemoveNodeAppliesRateAndParallel(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  [][]string
	}{
		{nil, [][]string{{"NODE.DRAIN", "n1"}}},
		{[]string{"--rate", "2mb", "--parallel", "1"}, [][]string{{"NODE.DRAIN", "n1"}, {"REBALANCE", "RATE", "2097152", "PARALLEL", "1"}}},
	} {
		f := startFakeNode(t)
		cmd := clusterCmd()
		cmd.SetOut(io.Discard)
		cmd.SetArgs(append([]string{"remove-node", "n1", "--addr", f.addr}, c.flags...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", c.flags, err)
		}
		f.mu.Lock()
		got := f.sent
		f.mu.Unlock()
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("remove-node %v sent %q, want %q", c.flags, got, c.want)
		}
	}
}
