package simcluster

import (
	"fmt"
	"hash/crc32"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/memgest/memgest/server/resp"
)

// trace is a run's event log: one line per command and reply, per step.
type trace struct {
	mu    sync.Mutex
	lines []string
}

func (t *trace) add(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// Trace is the run's event log so far: every traced command with its
// reply, every kill, partition and spare, and the map after each settled
// step. Two runs of a scenario with one seed give the same trace.
func (c *Cluster) Trace() []string {
	c.tracer.mu.Lock()
	defer c.tracer.mu.Unlock()
	return append([]string(nil), c.tracer.lines...)
}

// Note adds a line of the test's own to the trace.
func (c *Cluster) Note(format string, args ...any) { c.tracer.add(format, args...) }

// shownBytes is the longest string the trace shows as it is; longer ones
// are shown by length and CRC32.
const shownBytes = 48

// versionLike matches the write versions and wall-clock times a reply may
// carry (nanoseconds since 1970: 19 digits), which differ between runs.
var versionLike = regexp.MustCompile(`\d{16,}`)

// Render is a reply as the trace shows it: RESP's type marks, long
// strings by length and CRC32, and version-like numbers masked as <v>.
func Render(r resp.Reply) string {
	var b strings.Builder
	render(&b, r)
	return b.String()
}

func render(b *strings.Builder, r resp.Reply) {
	switch r.Kind() {
	case resp.KindSimple:
		b.WriteString("+" + mask(r.Text()))
	case resp.KindError:
		b.WriteString("-" + mask(r.Text()))
	case resp.KindInt:
		b.WriteString(":" + mask(strconv.FormatInt(r.Int(), 10)))
	case resp.KindNil, resp.KindNilArray:
		b.WriteString("nil")
	case resp.KindArray, resp.KindMap, resp.KindSet, resp.KindPush:
		b.WriteString("[")
		for i, it := range r.Items() {
			if i > 0 {
				b.WriteString(" ")
			}
			render(b, it)
		}
		b.WriteString("]")
	default:
		b.WriteString(short(r.Text()))
	}
}

// short quotes s, or names it by length and CRC32 when long.
func short(s string) string {
	if len(s) <= shownBytes {
		return strconv.Quote(mask(s))
	}
	return fmt.Sprintf("<%d bytes %08x>", len(s), crc32.ChecksumIEEE([]byte(s)))
}

// batchChunk matches where a batch stripe put an object (SCHEME.OF's and
// SCHEME.VERIFY's chunk of a batch key: shard, serial, data chunk), which
// rounds cut at a real-time bound and the GC's merges decide, not the
// seed (decision 0009).
var batchChunk = regexp.MustCompile(`^batch \d+/\d+/\d+$`)

func mask(s string) string {
	if batchChunk.MatchString(s) {
		return "batch <stripe>"
	}
	return versionLike.ReplaceAllString(s, "<v>")
}

// renderArgs is a command as the trace shows it.
func renderArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if len(a) > shownBytes || strings.ContainsAny(a, " \r\n") {
			out[i] = short(a)
		}
	}
	return strings.Join(out, " ")
}
