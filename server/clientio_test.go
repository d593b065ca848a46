package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/memgest/memgest/server/resp"
)

// chunkedReader returns its stream step bytes per Read.
type chunkedReader struct {
	stream []byte
	step   int
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(c.stream) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.stream[:min(c.step, len(c.stream))])
	c.stream = c.stream[n:]
	return n, nil
}

// TestRequestReaderKeepsArguments reads many requests, including values
// larger than a chunk, in reads of every size, and checks every argument
// after the whole stream is read: the reader never overwrites bytes it
// handed out.
func TestRequestReaderKeepsArguments(t *testing.T) {
	var stream bytes.Buffer
	var want []string
	for i := range 400 {
		v := strings.Repeat(string(rune('a'+i%26)), i*97%(3*chunkSize))
		fmt.Fprintf(&stream, "*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$%d\r\n%s\r\n", len(fmt.Sprint(i))+1, i, len(v), v)
		want = append(want, fmt.Sprintf("SET k%d %s", i, v))
		if i%7 == 0 {
			fmt.Fprintf(&stream, "GET 'k%d'\r\n", i)
			want = append(want, fmt.Sprintf("GET k%d", i))
		}
	}
	for _, step := range []int{1, 13, 1000, 70000} {
		rd := requestReader{conn: &chunkedReader{stream: stream.Bytes(), step: step}, maxBulk: 1 << 20, maxArgs: 10}
		var got [][][]byte
		for {
			cmds, err := rd.readPipeline(nil, false)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			got = append(got, cmds...)
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d requests, want %d", step, len(got), len(want))
		}
		for i, args := range got {
			if s := string(bytes.Join(args, []byte(" "))); s != want[i] {
				t.Fatalf("step %d: request %d is %.40q, want %.40q", step, i, s, want[i])
			}
		}
	}
}

// TestRequestReaderRunsRequestsBeforeAnError checks that the complete
// requests before a malformed one are returned first, and the error next.
func TestRequestReaderRunsRequestsBeforeAnError(t *testing.T) {
	stream := "PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n+PING\r\n*1\r\n$4\r\nPING\r\n"
	rd := requestReader{conn: &chunkedReader{stream: []byte(stream), step: len(stream)}, maxBulk: 100, maxArgs: 10}
	cmds, err := rd.readPipeline(nil, false)
	if err != nil || len(cmds) != 2 {
		t.Fatalf("first read: %q, %v", cmds, err)
	}
	_, err = rd.readPipeline(nil, false)
	var bad *resp.RequestError
	if !errors.As(err, &bad) || bad.Msg != "expected '$', got '+'" {
		t.Fatalf("second read: %v", err)
	}
}

// TestRequestReaderRefusesBeforeThePayload checks that an over-limit bulk
// is refused from its header, without waiting for (or buffering) the
// payload it announces.
func TestRequestReaderRefusesBeforeThePayload(t *testing.T) {
	r, w := io.Pipe()
	defer r.Close()
	go func() { _, _ = w.Write([]byte("*2\r\n$3\r\nGET\r\n$99999999999\r\n")) }()
	rd := requestReader{conn: r, maxBulk: 1 << 20, maxArgs: 10}
	_, err := rd.readPipeline(nil, false)
	var bad *resp.RequestError
	if !errors.As(err, &bad) || bad.Msg != "invalid bulk length" {
		t.Fatalf("got %v", err)
	}
	if len(rd.buf) > chunkSize {
		t.Fatalf("buffered %d bytes for a refused request", len(rd.buf))
	}
}
