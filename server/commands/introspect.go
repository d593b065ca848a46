package commands

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/object"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// The commands that describe rather than change (issue 28): TIME, WAIT,
// OBJECT and MEMORY USAGE. Where memgest keeps something other than what
// Redis keeps, the answer is what memgest has, as
// docs/decisions/0013-keyspace-commands.md decides.

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("time", &command{run: cmdTime})
	register("wait", data(cmdWait))
	register("object", data(cmdObject))
	register("memory", data(cmdMemory))
}

// cmdTime is the node's clock: Unix seconds and the microseconds within
// the second, as bulk strings.
func cmdTime(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	now := time.Now()
	return resp.Array(resp.BulkString(strconv.FormatInt(now.Unix(), 10)),
		resp.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10)))
}

// cmdWait is WAIT numreplicas timeout. memgest acknowledges a write only
// once every node holding a piece of it (replica, shard, parity) has
// stored it, so nothing is left to wait for: WAIT answers at once with the
// number of nodes other than the coordinator that hold the redundancy of
// the connection's last written key now, however many were asked for and
// whatever the timeout (decision 0013). Its arguments are checked as
// Redis checks them.
func cmdWait(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if _, ok := resp.ParseInt(args[1]); !ok {
		return resp.ErrNotInteger
	}
	timeout, ok := resp.ParseInt(args[2])
	switch {
	case !ok:
		return resp.Err("ERR timeout is not an integer or out of range")
	case timeout < 0:
		return resp.Err("ERR timeout is negative")
	case timeout > math.MaxInt64-core.NowMs():
		return resp.Err("ERR timeout is out of range")
	}
	cs.mu.Lock()
	key := bytes.Clone(cs.lastWrite) // noteWrite reuses its buffer
	cs.mu.Unlock()
	if key == nil {
		return resp.Int(0)
	}
	return resp.Int(int64(n.holders(ctx, cs, key)))
}

// holders counts the nodes other than key's coordinator that hold its
// redundancy (replicas, shards, parity) and are up, from SCHEME.OF at its
// coordinator: 0 for a key that is gone or in none. The data chunks of a
// batch stripe (role "data") hold other coordinators' objects, not this
// key's redundancy, and are not counted.
func (n *Server) holders(ctx context.Context, cs *connState, key []byte) int {
	r := n.execute(ctx, cs.sub(), [][]byte{[]byte("scheme.of"), key})
	if r.IsError() || r.IsNil() {
		return 0
	}
	items := r.Items()
	var pieces []resp.Reply
	for i := 0; i+1 < len(items); i += 2 {
		if items[i].Text() == "pieces" {
			pieces = items[i+1].Items()
		}
	}
	seen := map[string]bool{}
	coordinator := ""
	for i, p := range pieces {
		f := p.Items() // role, index, node id, address, state
		if len(f) < 5 {
			continue
		}
		if i == 0 {
			coordinator = f[2].Text()
			continue
		}
		if id := f[2].Text(); id != coordinator && f[4].Text() == "up" && f[0].Text() != "data" {
			seen[id] = true
		}
	}
	return len(seen)
}

// cmdObject is OBJECT ENCODING, FREQ, IDLETIME, REFCOUNT and HELP; the
// dispatcher has routed the key subcommands to the key's coordinator.
func cmdObject(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	sub := strings.ToLower(string(args[1]))
	if sub == "help" {
		return objectHelp
	}
	cur, r := n.getOrNil(ctx, args[2])
	if !cur.Exists {
		return r
	}
	switch sub {
	case "encoding":
		return resp.BulkString(encoding(cur.Value))
	case "refcount":
		return resp.Int(refcount(cur.Value))
	case "idletime":
		idle, ok := n.IdleSeconds(args[2])
		if !ok {
			return errIdleNotTracked
		}
		return resp.Int(idle)
	}
	return errFreqNotTracked // memgest has no LFU policy, like Redis without one
}

var (
	objectHelp = resp.Help("object",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.")
	errFreqNotTracked = resp.Err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	errIdleNotTracked = resp.Err("ERR memgest: idle time is tracked only under a temperature policy (SCHEME.POLICY TEMPERATURE); without one no use of a key is recorded")
)

// Redis's limits between encodings (server.h, redis.conf defaults): a
// string of at most 44 bytes is embstr; a hash is a listpack while it has
// at most 128 fields and none of its fields or values is longer than 64
// bytes. Redis shares the integers below 10000 (OBJ_SHARED_INTEGERS).
const (
	embstrLimit        = 44
	listpackEntries    = 128
	listpackValue      = 64
	sharedIntegers     = 10000
	sharedRefcount     = math.MaxInt32
	integerStringLimit = 20
)

// encoding is the encoding Redis would give the value stored by SET (or
// HSET): a string that is an integer is "int", a short one "embstr", else
// "raw"; a hash "listpack" while small, else "hashtable". Redis also makes
// a string "raw" after APPEND or SETRANGE; memgest keeps no such history.
func encoding(v []byte) string {
	if object.TypeOf(v) == object.Hash {
		h, err := object.DecodeHash(v)
		if err != nil || len(h) > listpackEntries {
			return "hashtable"
		}
		for _, f := range h {
			if len(f.Name) > listpackValue || len(f.Value) > listpackValue {
				return "hashtable"
			}
		}
		return "listpack"
	}
	if _, ok := resp.ParseInt(v); ok && len(v) <= integerStringLimit {
		return "int"
	}
	if len(v) <= embstrLimit {
		return "embstr"
	}
	return "raw"
}

// refcount is OBJECT REFCOUNT as Redis answers by default: INT_MAX for the
// shared integers, 1 for any other value.
func refcount(v []byte) int64 {
	if i, ok := resp.ParseInt(v); ok && i >= 0 && i < sharedIntegers {
		return sharedRefcount
	}
	return 1
}

// cmdMemory is MEMORY USAGE key [SAMPLES count] and MEMORY HELP; memgest
// has no allocator to report on (DOCTOR, STATS, MALLOC-STATS, PURGE).
func cmdMemory(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if strings.EqualFold(string(args[1]), "help") {
		return memoryHelp
	}
	for j := 3; j < len(args); j++ {
		if !strings.EqualFold(string(args[j]), "samples") || j+1 >= len(args) {
			return resp.ErrSyntax
		}
		samples, ok := resp.ParseInt(args[j+1])
		if !ok {
			return resp.ErrNotInteger
		}
		if samples < 0 {
			return resp.ErrSyntax
		}
		j++ // a value is one object: nothing to sample
	}
	cur, r := n.getOrNil(ctx, args[2])
	if !cur.Exists {
		return r
	}
	return resp.Int(memoryUsage(args[2], cur))
}

// getOrNil reads key for a command that answers nil for a missing key:
// the key's state, or (not existing) the reply to give, nil or an error.
func (n *Server) getOrNil(ctx context.Context, key []byte) (core.Current, resp.Reply) {
	cur, err := n.Get(ctx, key)
	if err != nil {
		return core.Current{}, errReply(err)
	}
	return cur, resp.Nil()
}

var memoryHelp = resp.Help("memory",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value across the cluster under",
	"    its scheme: (key + value + per-record overhead) x the scheme's overhead.")

// recordOverhead is what the store spends per key beyond its key and
// value: record header, index and slack, 34.4 to 36.5 bytes as measured
// (docs/store.md).
const recordOverhead = 36

// memoryUsage is what key costs the cluster under its scheme: its key,
// value and the store's per-record overhead, times the scheme's stored
// bytes per logical byte (1 for none, R for rep:R, (K+M)/K for split and
// stripe, (2K+M-1)/K for hybrid).
func memoryUsage(key []byte, cur core.Current) int64 {
	logical := float64(len(key) + len(cur.Value) + recordOverhead)
	return int64(math.Ceil(logical * cur.Entry.Spec.Overhead()))
}

// noteWrite remembers the first key of a write that succeeded, for WAIT:
// copied into the connection's own buffer, so that an idle connection
// does not keep its last request's read chunk alive (clientio.go), and
// without an allocation once the buffer has grown.
func (cs *connState) noteWrite(spec *resp.CommandSpec, keys [][]byte, r resp.Reply) {
	if len(keys) == 0 || spec == nil || !spec.Has(resp.FlagWrite) || r.IsError() {
		return
	}
	cs.mu.Lock()
	cs.lastWrite = append(cs.lastWrite[:0], keys[0]...)
	cs.mu.Unlock()
}
