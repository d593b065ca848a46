package commands

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// The meter follows Redis's trackInstantaneousMetric: one sample of the
// rate per call, the reading the mean of the last 16, with the samples
// not yet taken counting as 0.
func TestRateMeter(t *testing.T) {
	var m rateMeter
	const step = int64(100 * time.Millisecond)
	now, total := int64(0), int64(0)
	m.sample(now, total) // the base: no sample yet
	if r := m.rate(); r != 0 {
		t.Fatalf("rate %v before any sample", r)
	}
	for range 8 { // 100 per 100 ms: 1000/s
		now, total = now+step, total+100
		m.sample(now, total)
	}
	if r := m.rate(); r != 500 {
		t.Fatalf("8 of 16 samples at 1000/s read %v, want 500", r)
	}
	for range 8 {
		now, total = now+step, total+100
		m.sample(now, total)
	}
	if r := m.rate(); r != 1000 {
		t.Fatalf("16 samples at 1000/s read %v, want 1000", r)
	}
	for range 16 { // idle: the old samples roll out
		now += step
		m.sample(now, total)
	}
	if r := m.rate(); r != 0 {
		t.Fatalf("16 idle samples read %v, want 0", r)
	}
	m.sample(now, total+50) // no time passed: a zero sample, not a division by zero
	if r := m.rate(); r != 0 {
		t.Fatalf("a sample at the same instant read %v", r)
	}
}

// An error reply's code is its first word, as Redis's afterErrorReply
// takes it, and ERR when no space comes early enough.
func TestErrorCode(t *testing.T) {
	for msg, want := range map[string]string{
		"ERR wrong number of arguments for 'get' command":                   "ERR",
		"WRONGTYPE Operation against a key holding the wrong kind of value": "WRONGTYPE",
		"MOVED 3999 127.0.0.1:7002":                                         "MOVED",
		"NOSPACE":                                                           "ERR",
		"ABCDEFGHIJABCDEFGHIJABCDEFGHIJ x":                                  "ABCDEFGHIJABCDEFGHIJABCDEFGHIJ",
		"ABCDEFGHIJABCDEFGHIJABCDEFGHIJK x":                                 "ERR",
		"":                                                                  "ERR",
	} {
		if got := errorCode(msg); got != want {
			t.Errorf("errorCode(%q) = %q, want %q", msg, got, want)
		}
	}
}

// INFO's total_net_input_bytes and total_net_output_bytes count the
// bytes of the client connections, and total_connections_received the
// connections.
func TestNetBytesCounted(t *testing.T) {
	n := readyNode(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.Serve(l)
	t.Cleanup(func() { n.Close() })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\nPING\r\n" // 25 + 6 bytes, pipelined
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(c)
	for _, want := range []string{"$5\r\n", "hello\r\n", "+PONG\r\n"} { // 11 + 7 bytes
		if line, err := rd.ReadString('\n'); err != nil || line != want {
			t.Fatalf("read %q, %v; want %q", line, err, want)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for n.info.meters.netOut.Load() != 18 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // counted just after the write
	}
	if in, out := n.info.meters.netIn.Load(), n.info.meters.netOut.Load(); in != int64(len(req)) || out != 18 {
		t.Fatalf("net input %d, output %d bytes; want %d and 18", in, out, len(req))
	}
	if got := n.Stats.Connections.Load(); got != 1 {
		t.Fatalf("total_connections_received %d", got)
	}
}
