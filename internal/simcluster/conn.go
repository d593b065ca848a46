package simcluster

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/memgest/memgest/server/resp"
)

// Conn is a client connection of the test's own to one node, over an
// in-memory pipe (server.Node.Connect): for what Do cannot show, such as
// a subscriber's messages, pushed when the node decides. Like Do it
// records what it sends and receives in the trace. A pipe has no buffer:
// what the node writes waits until the test reads it, so a test that does
// not read is a client that does not read.
type Conn struct {
	c    *Cluster
	node int
	id   int
	nc   net.Conn
	buf  []byte
}

// Connect opens a connection to node i, closed with the cluster.
func (c *Cluster) Connect(i int) *Conn {
	c.t.Helper()
	if !c.nodes[i].alive {
		c.t.Fatalf("simcluster: connect to node %d, which is not running", i)
	}
	c.conns++
	x := &Conn{c: c, node: i, id: c.conns, nc: c.nodes[i].srv.Connect()}
	c.t.Cleanup(func() { _ = x.nc.Close() })
	return x
}

// Send writes one command without reading anything.
func (x *Conn) Send(args ...string) {
	x.c.t.Helper()
	x.c.tracer.add("n%d c%d %s", x.node, x.id, renderArgs(args))
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	_ = x.nc.SetWriteDeadline(time.Now().Add(commandTimeout))
	if _, err := x.nc.Write(b); err != nil {
		x.c.t.Fatalf("simcluster: send on connection %d to node %d: %v", x.id, x.node, err)
	}
}

// Receive reads the next reply or push, failing the test if none comes
// within commandTimeout.
func (x *Conn) Receive() resp.Reply {
	x.c.t.Helper()
	r, err := x.ReceiveWithin(commandTimeout)
	if err != nil {
		x.c.t.Fatalf("simcluster: connection %d to node %d: %v", x.id, x.node, err)
	}
	return r
}

// ReceiveWithin reads the next reply or push, waiting at most d; the
// error is os.ErrDeadlineExceeded when nothing came, io.EOF when the node
// closed the connection.
func (x *Conn) ReceiveWithin(d time.Duration) (resp.Reply, error) {
	_ = x.nc.SetReadDeadline(time.Now().Add(d))
	for {
		r, n, err := resp.Parse(x.buf)
		if err == nil {
			x.buf = x.buf[n:]
			x.c.tracer.add("n%d c%d → %s", x.node, x.id, Render(r))
			return r, nil
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			return resp.Reply{}, err
		}
		chunk := make([]byte, 64<<10)
		got, err := x.nc.Read(chunk)
		x.buf = append(x.buf, chunk[:got]...)
		if got == 0 && err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF) {
				return resp.Reply{}, err
			}
			return resp.Reply{}, io.EOF // a closed pipe
		}
	}
}

// Do sends one command and reads one reply (the first, for a command
// that gets several).
func (x *Conn) Do(args ...string) resp.Reply {
	x.c.t.Helper()
	x.Send(args...)
	return x.Receive()
}

// Close closes the connection, as a client leaving would.
func (x *Conn) Close() {
	x.c.tracer.add("n%d c%d closed", x.node, x.id)
	_ = x.nc.Close()
}
