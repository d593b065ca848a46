package simcluster_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/resp"
)

var transcriptRedis = flag.String("transcript.redis", "",
	"host:port of a redis-server: rewrite testdata/transcripts/*.txt with its replies instead of replaying them")

// Golden transcripts of Redis (STYLE.md item 6): each file in
// testdata/transcripts lists commands ("> CMD arg ...", arguments
// space-separated, Go-quoted when they hold spaces or odd bytes) each
// followed by the reply a real redis-server gave, as simcluster.Render
// prints it. The test replays every file on each scheme and expects
// Redis's replies, error texts included; `go test -run TestRedisTranscripts
// -transcript.redis=127.0.0.1:6379` rewrites the replies from a Redis of
// one's own (FLUSHALL first: use a scratch server). Keys share the slot of
// the tag {t}, so two-key commands run as on one Redis Cluster node.
func TestRedisTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	if *transcriptRedis != "" {
		for _, f := range files {
			rewriteTranscript(t, f, *transcriptRedis)
		}
		return
	}
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range everyScheme {
		setDefaultScheme(t, c, spec)
		for _, f := range files {
			t.Run(spec+"/"+filepath.Base(f), func(t *testing.T) {
				c.Do(c.AnyLive(), "FLUSHALL", "CLUSTER")
				for _, step := range readTranscript(t, f) {
					if got := simcluster.Render(c.Do(c.AnyLive(), step.args...)); got != step.reply {
						t.Fatalf("%s:%d: %s = %s, Redis answered %s", f, step.line, strings.Join(step.args, " "), got, step.reply)
					}
				}
			})
		}
	}
}

// setDefaultScheme makes spec the default and waits until every node's
// map has it.
func setDefaultScheme(t *testing.T, c *simcluster.Cluster, spec string) {
	t.Helper()
	if r := c.Do(c.AnyLive(), "SCHEME.DEFAULT", spec); r.IsError() {
		t.Fatalf("SCHEME.DEFAULT %s: %s", spec, r.Text())
	}
	c.WaitMap("default "+spec, func(m *cluster.Map) bool { return m.DefaultScheme().Name() == spec })
}

// step is one command of a transcript and Redis's reply.
type step struct {
	line  int
	args  []string
	reply string
}

func readTranscript(t *testing.T, path string) []step {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "> ") {
			continue
		}
		args, err := splitArgs(l[2:])
		if err != nil || i+1 >= len(lines) {
			t.Fatalf("%s:%d: bad command line %q (%v)", path, i+1, l, err)
		}
		steps = append(steps, step{line: i + 1, args: args, reply: lines[i+1]})
		i++
	}
	return steps
}

// splitArgs splits a command line at spaces; an argument starting with a
// double quote is a Go string literal.
func splitArgs(s string) ([]string, error) {
	var args []string
	for s = strings.TrimLeft(s, " "); s != ""; s = strings.TrimLeft(s, " ") {
		if s[0] != '"' {
			end := strings.IndexByte(s, ' ')
			if end < 0 {
				end = len(s)
			}
			args, s = append(args, s[:end]), s[end:]
			continue
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, err
		}
		a, _ := strconv.Unquote(q)
		args, s = append(args, a), s[len(q):]
	}
	return args, nil
}

// rewriteTranscript runs path's commands on the Redis at addr (after a
// FLUSHALL) and writes its replies in place of the old ones.
func rewriteTranscript(t *testing.T, path, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	do := func(args ...string) resp.Reply {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		req := fmt.Sprintf("*%d\r\n", len(args))
		for _, a := range args {
			req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		var buf []byte
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			buf = append(buf, line...)
			r, _, err := resp.Parse(buf)
			if err == nil {
				return r
			}
			if !errors.Is(err, resp.ErrIncomplete) {
				t.Fatalf("%s: reply %q: %v", addr, buf, err)
			}
		}
	}
	do("FLUSHALL")
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		if strings.HasPrefix(lines[i], "> ") {
			args, err := splitArgs(lines[i][2:])
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			out = append(out, simcluster.Render(do(args...)))
			if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "> ") && !strings.HasPrefix(lines[i+1], "#") && lines[i+1] != "" {
				i++ // the old reply
			}
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
