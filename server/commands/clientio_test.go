package commands

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
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

// mgetRequest is one MGET of keys keys, "k0" to "k<keys-1>", as a client
// sends it.
func mgetRequest(keys int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n$4\r\nMGET\r\n", keys+1)
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(k), k)
	}
	return b.Bytes()
}

// readAll reads every request of stream in reads of the sizes steps gives
// in turn, and returns the requests with the reader.
func readAll(stream []byte, steps []int, maxBulk, maxArgs int64) ([][][]byte, *requestReader, error) {
	rd := &requestReader{conn: &steppedReader{stream: stream, steps: steps}, maxBulk: maxBulk, maxArgs: maxArgs}
	var got [][][]byte
	for {
		cmds, err := rd.readPipeline(nil, false)
		got = append(got, cmds...)
		if errors.Is(err, io.EOF) {
			return got, rd, nil
		}
		if err != nil {
			return got, rd, err
		}
	}
}

// steppedReader returns its stream in reads of the sizes steps gives in
// turn (or less, when the reader offers less room).
type steppedReader struct {
	stream []byte
	steps  []int
	i      int
}

func (s *steppedReader) Read(p []byte) (int, error) {
	if len(s.stream) == 0 {
		return 0, io.EOF
	}
	step := s.steps[s.i%len(s.steps)]
	s.i++
	n := copy(p, s.stream[:min(step, len(s.stream))])
	s.stream = s.stream[n:]
	return n, nil
}

// TestRequestReaderWorkIsLinear reads a 200,000-argument MGET and a
// 4 MiB SET in small reads and checks that the bytes the reader hands the
// parser and carries over to new chunks stay within twice the bytes read.
// Before the parser resumed where a read ended, a request over 16 KiB was
// copied and parsed again from its start after every read of at most
// 1 KiB: O(n²) in the request's length (issue 23).
func TestRequestReaderWorkIsLinear(t *testing.T) {
	set := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4194304\r\n" + strings.Repeat("v", 4<<20) + "\r\n")
	for _, tc := range []struct {
		name   string
		stream []byte
		args   int
	}{
		{"mget", mgetRequest(200_000), 200_001},
		{"set", set, 3},
	} {
		for _, step := range []int{1000, 1460, 16 << 10} {
			got, rd, err := readAll(tc.stream, []int{step}, 8<<20, 1<<20)
			if err != nil || len(got) != 1 || len(got[0]) != tc.args {
				t.Fatalf("%s in reads of %d: %d requests, %v", tc.name, step, len(got), err)
			}
			total := int64(len(tc.stream))
			if work := rd.offered + rd.carried; work > 2*total {
				t.Errorf("%s in reads of %d: %d bytes parsed and %d carried over for %d read (%.1fx)",
					tc.name, step, rd.offered, rd.carried, total, float64(work)/float64(total))
			}
		}
	}
}

// FuzzRequestReaderReads checks that reading a stream in reads of any
// sizes gives the same requests (checked after the whole stream is read,
// so none changed after it was handed out) and the same error as reading
// it in one read.
func FuzzRequestReaderReads(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPING\r\n"), []byte{0, 3, 200})
	f.Add(mgetRequest(300), []byte{2})
	f.Add([]byte("SET k \"a b\"\r\n*1\r\n$20\r\nabc"), []byte{1})
	f.Add([]byte("PING\r\n*1\r\n+PING\r\n"), []byte{4})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		steps := []int{max(1, len(stream))}
		if len(cuts) > 0 {
			steps = steps[:0]
			for _, c := range cuts {
				steps = append(steps, int(c)*97+1) // up to 24 KiB, across chunk ends
			}
		}
		want, _, wantErr := readAll(bytes.Clone(stream), []int{max(1, len(stream))}, 1<<16, 1000)
		got, _, err := readAll(bytes.Clone(stream), steps, 1<<16, 1000)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || len(got) != len(want) {
			t.Fatalf("in reads of %v: %d requests, %v; in one read: %d, %v", steps, len(got), err, len(want), wantErr)
		}
		for i := range want {
			if !slices.EqualFunc(got[i], want[i], bytes.Equal) {
				t.Fatalf("in reads of %v: request %d is %q, in one read %q", steps, i, got[i], want[i])
			}
		}
	})
}
