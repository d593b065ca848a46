package commands

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/server/resp"
)

// The counters behind INFO commandstats and errorstats, kept as Redis 7
// keeps them (server.c call, rejectCommand, afterErrorReply):
//
//   - calls and usec count the commands that ran; usec is the time from
//     dispatch to reply, waits on peers included (Redis's is the command's
//     own time on its one thread);
//   - rejected_calls counts commands refused before they ran: wrong
//     arity, NOAUTH, and the cluster refusals (MOVED, ASK, CROSSSLOT,
//     CLUSTERDOWN), which Redis Cluster gives before running a command
//     and never after;
//   - failed_calls counts commands that ran and answered an error;
//   - errorstat_<CODE> counts every error reply by its first word,
//     unknown commands included.
//
// A command counts on the node that ran it: a command forwarded to its
// key's coordinator counts there too, and the part of a multi-key command
// a node runs for another counts as a call of its own.

// cmdStat is one command's (or subcommand's) counters.
type cmdStat struct {
	calls, nanos, rejected, failed atomic.Int64
}

// cmdStats are the counters of every command in the table, by
// resp.CommandSpec.Index, and of error replies by code.
type cmdStats struct {
	byIndex []cmdStat
	errs    errorCounts
}

func newCmdStats() *cmdStats {
	return &cmdStats{byIndex: make([]cmdStat, resp.SpecCount())}
}

// ran counts a command of spec that ran for took nanoseconds and answered r.
func (s *cmdStats) ran(spec *resp.CommandSpec, r resp.Reply, took int64) {
	c := &s.byIndex[spec.Index()]
	if !r.IsError() {
		c.calls.Add(1)
		c.nanos.Add(took)
		return
	}
	code := s.errs.count(r.Text())
	if refusedBeforeRunning(code) {
		c.rejected.Add(1)
		return
	}
	c.calls.Add(1)
	c.nanos.Add(took)
	c.failed.Add(1)
}

// rejected counts an error reply r given before a command ran; spec is the
// command it names, nil for none (an unknown command or subcommand).
func (s *cmdStats) rejected(spec *resp.CommandSpec, r resp.Reply) {
	s.errs.count(r.Text())
	if spec != nil {
		s.byIndex[spec.Index()].rejected.Add(1)
	}
}

// reset zeroes every count (CONFIG RESETSTAT).
func (s *cmdStats) reset() {
	for i := range s.byIndex {
		c := &s.byIndex[i]
		c.calls.Store(0)
		c.nanos.Store(0)
		c.rejected.Store(0)
		c.failed.Store(0)
	}
	s.errs.mu.Lock()
	clear(s.errs.codes)
	s.errs.total.Store(0)
	s.errs.mu.Unlock()
}

// refusedBeforeRunning says whether an error code is one Redis Cluster
// answers only before running a command (processCommand's redirections).
func refusedBeforeRunning(code string) bool {
	switch code {
	case "MOVED", "ASK", "CROSSSLOT", "CLUSTERDOWN":
		return true
	}
	return false
}

// section renders INFO commandstats: every command that was called,
// rejected or failed, sorted by name, subcommands after their container.
func (s *cmdStats) section() resp.InfoSection {
	sec := resp.InfoSection{Name: "Commandstats", Extra: true}
	var walk func([]*resp.CommandSpec)
	walk = func(specs []*resp.CommandSpec) {
		for _, spec := range specs {
			c := &s.byIndex[spec.Index()]
			calls, nanos, rej, failed := c.calls.Load(), c.nanos.Load(), c.rejected.Load(), c.failed.Load()
			if calls != 0 || rej != 0 || failed != 0 {
				sec.Fields = append(sec.Fields, [2]string{"cmdstat_" + spec.Name, cmdstatLine(calls, nanos, rej, failed)})
			}
			walk(spec.Subcommands)
		}
	}
	walk(resp.Commands())
	return sec
}

// cmdstatLine is Redis's "calls=..,usec=..,usec_per_call=..,rejected_calls=..,failed_calls=..",
// in the order redis_exporter parses by position.
func cmdstatLine(calls, nanos, rejected, failed int64) string {
	usec := nanos / 1000
	perCall := 0.0
	if calls > 0 {
		perCall = float64(usec) / float64(calls)
	}
	return "calls=" + strconv.FormatInt(calls, 10) + ",usec=" + strconv.FormatInt(usec, 10) +
		",usec_per_call=" + strconv.FormatFloat(perCall, 'f', 2, 64) +
		",rejected_calls=" + strconv.FormatInt(rejected, 10) + ",failed_calls=" + strconv.FormatInt(failed, 10)
}

// maxErrorCodes bounds the distinct codes counted, as Redis bounds its
// error table (ERROR_STATS_NUMBER); later new codes count in the total
// only.
const maxErrorCodes = 128

// errorCounts counts error replies by code.
type errorCounts struct {
	total atomic.Int64
	mu    sync.RWMutex
	codes map[string]*atomic.Int64
}

// count counts an error reply whose text (without the "-") is msg and
// returns its code.
func (e *errorCounts) count(msg string) string {
	e.total.Add(1)
	code := errorCode(msg)
	e.mu.RLock()
	c := e.codes[code]
	e.mu.RUnlock()
	if c == nil {
		e.mu.Lock()
		if c = e.codes[code]; c == nil && len(e.codes) < maxErrorCodes {
			if e.codes == nil {
				e.codes = map[string]*atomic.Int64{}
			}
			c = new(atomic.Int64)
			e.codes[code] = c
		}
		e.mu.Unlock()
	}
	if c != nil {
		c.Add(1)
	}
	return code
}

// errorCode is an error reply's code as Redis's afterErrorReply takes it:
// the text up to the first space if one comes within 32 bytes, else ERR.
func errorCode(msg string) string {
	if i := strings.IndexByte(msg[:min(len(msg), 31)], ' '); i > 0 {
		return msg[:i]
	}
	return "ERR"
}

// section renders INFO errorstats, codes sorted.
func (e *errorCounts) section() resp.InfoSection {
	sec := resp.InfoSection{Name: "Errorstats"}
	e.mu.RLock()
	for c, n := range e.codes {
		sec.Fields = append(sec.Fields, [2]string{"errorstat_" + c, "count=" + strconv.FormatInt(n.Load(), 10)})
	}
	e.mu.RUnlock()
	slices.SortFunc(sec.Fields, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return sec
}
