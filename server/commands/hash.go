package commands

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"

	"github.com/memgest/memgest/object"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// The hash commands (issue 28). A hash is one value (object.HashObject)
// under its key's scheme, like a string: replicated, split or packed. A
// read fetches the value as GET does and looks fields up in it; a write
// is a read-modify-write of the whole value, which the key's scheme
// stores as it stores any new value — a packed scheme in place with a
// parity delta when the encoding keeps its length (a field's value
// replaced by one as long), otherwise re-encoded
// (docs/decisions/0012-value-types.md).

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("hset", data(cmdHSet))
	register("hmset", data(cmdHSet))
	register("hsetnx", data(cmdHSetNX))
	register("hget", data(cmdHGet))
	register("hmget", data(cmdHMGet))
	register("hgetall", data(hashListing(true, true)))
	register("hkeys", data(hashListing(true, false)))
	register("hvals", data(hashListing(false, true)))
	register("hdel", data(cmdHDel))
	register("hexists", data(cmdHExists))
	register("hlen", data(cmdHLen))
	register("hstrlen", data(cmdHStrlen))
	register("hincrby", data(cmdHIncrBy))
	register("hincrbyfloat", data(cmdHIncrByFloat))
	register("hscan", data(cmdHScan))
	register("hrandfield", data(cmdHRandField))
}

var (
	errHashNotInt      = replyErr("ERR hash value is not an integer")
	errHashNotFloat    = replyErr("ERR hash value is not a float")
	errNotFloat        = replyErr("ERR value is not a valid float")
	errFloatInfinite   = replyErr("ERR increment would produce NaN or Infinity")
	errIncrNaN         = replyErr("ERR value is NaN or Infinity")
	errHashTooBig      = replyErr("ERR memgest: the hash would exceed the node's maximum value size")
	errValueOutOfRange = replyErr("ERR value is out of range")
)

// hashOf decodes cur's hash: none for a missing key, errWrongType for a
// key of another type.
func hashOf(cur core.Current) (object.HashObject, error) {
	if !cur.Exists {
		return nil, nil
	}
	if typeOf(cur) != object.Hash {
		return nil, errWrongType
	}
	h, err := object.DecodeHash(cur.Value)
	if err != nil {
		return nil, fmt.Errorf("memgest: %w", err)
	}
	return h, nil
}

// hashWrite is a read-modify-write of the hash at key. edit changes the
// decoded fields (none for a missing key) and says whether it changed
// them; it may run more than once and must decide from h alone. A hash
// left without fields is deleted, as Redis deletes it; the key keeps its
// scheme and expiry.
func (n *Server) hashWrite(ctx context.Context, key []byte, edit func(h *object.HashObject) (bool, error)) error {
	return n.RMW(ctx, key, func(cur core.Current) (*core.WriteOp, error) {
		h, err := hashOf(cur)
		if err != nil {
			return nil, err
		}
		changed, err := edit(&h)
		if err != nil || !changed {
			return nil, err
		}
		if len(h) == 0 {
			return &core.WriteOp{Key: key, Del: true, Entry: cur.Entry}, nil
		}
		if int64(h.EncodedLen()) > n.Cfg.MaxValueSize {
			return nil, errHashTooBig
		}
		return n.ValueOp(cur, key, h.Encode(), 0, true, nil), nil
	})
}

// hashValue reads key's value for a hash read: nil for a missing key, or
// the reply (WRONGTYPE, a read error) when it is no hash.
func (n *Server) hashValue(ctx context.Context, key []byte) ([]byte, resp.Reply) {
	cur, err := n.Get(ctx, key)
	if err != nil {
		return nil, errReply(err)
	}
	if !cur.Exists {
		return nil, resp.Reply{}
	}
	if typeOf(cur) != object.Hash {
		return nil, resp.ErrWrongType
	}
	n.Accessed(key, cur)
	return cur.Value, resp.Reply{}
}

// readHash is hashValue decoded.
func (n *Server) readHash(ctx context.Context, key []byte) (object.HashObject, resp.Reply) {
	v, r := n.hashValue(ctx, key)
	if r.IsError() || v == nil {
		return nil, r
	}
	h, err := object.DecodeHash(v)
	if err != nil {
		return nil, corruptHash(key, err)
	}
	return h, resp.Reply{}
}

// corruptHash answers a hash value of key that does not parse.
func corruptHash(key []byte, err error) resp.Reply {
	return errReply(fmt.Errorf("memgest: key %q: %w", key, err))
}

// cmdHSet is HSET (the number of fields added) and HMSET (OK).
func cmdHSet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args)%2 != 0 {
		return resp.ErrWrongArity(string(args[0]))
	}
	var added int64
	err := n.hashWrite(ctx, args[1], func(h *object.HashObject) (bool, error) {
		added = 0
		for i := 2; i < len(args); i += 2 {
			if h.Set(args[i], args[i+1]) {
				added++
			}
		}
		return true, nil
	})
	switch {
	case err != nil:
		return errReply(err)
	case len(args[0]) == 5: // hmset
		return resp.OK()
	}
	return resp.Int(added)
}

func cmdHSetNX(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var set bool
	err := n.hashWrite(ctx, args[1], func(h *object.HashObject) (bool, error) {
		set = h.Index(args[2]) < 0
		if set {
			h.Set(args[2], args[3])
		}
		return set, nil
	})
	if err != nil {
		return errReply(err)
	}
	return intBool(set)
}

func cmdHGet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	v, r := n.hashValue(ctx, args[1])
	if r.IsError() || v == nil {
		return orNil(r)
	}
	val, ok, err := object.HashGet(v, args[2])
	switch {
	case err != nil:
		return corruptHash(args[1], err)
	case !ok:
		return resp.Nil()
	}
	return resp.BulkOwned(val)
}

// orNil is r, or nil when r is no reply (a missing key).
func orNil(r resp.Reply) resp.Reply {
	if r.IsZero() {
		return resp.Nil()
	}
	return r
}

func cmdHMGet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	h, r := n.readHash(ctx, args[1])
	if r.IsError() {
		return r
	}
	items := make([]resp.Reply, 0, len(args)-2)
	for _, f := range args[2:] {
		if v, ok := h.Get(f); ok {
			items = append(items, resp.BulkOwned(v))
		} else {
			items = append(items, resp.Nil())
		}
	}
	return resp.Array(items...)
}

// hashListing builds HGETALL (names and values: a map in RESP3), HKEYS
// and HVALS.
func hashListing(names, values bool) handler {
	return func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		h, r := n.readHash(ctx, args[1])
		if r.IsError() {
			return r
		}
		items := fieldReplies(h, names, values)
		if names && values {
			return resp.Map(items...)
		}
		return resp.Array(items...)
	}
}

// fieldReplies lists h's names, values, or both interleaved.
func fieldReplies(h object.HashObject, names, values bool) []resp.Reply {
	items := make([]resp.Reply, 0, 2*len(h))
	for _, f := range h {
		if names {
			items = append(items, resp.BulkOwned(f.Name))
		}
		if values {
			items = append(items, resp.BulkOwned(f.Value))
		}
	}
	return items
}

func cmdHDel(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var removed int64
	err := n.hashWrite(ctx, args[1], func(h *object.HashObject) (bool, error) {
		removed = 0
		for _, f := range args[2:] {
			if h.Del(f) {
				removed++
			}
		}
		return removed > 0, nil
	})
	if err != nil {
		return errReply(err)
	}
	return resp.Int(removed)
}

func cmdHExists(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	return fieldInt(n, ctx, args, func(v []byte, ok bool) int64 {
		if ok {
			return 1
		}
		return 0
	})
}

func cmdHStrlen(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	return fieldInt(n, ctx, args, func(v []byte, ok bool) int64 { return int64(len(v)) })
}

// fieldInt answers an integer about field args[2] of hash args[1]: f of
// its value and presence (nil and false when the field or key is absent).
func fieldInt(n *Server, ctx context.Context, args [][]byte, f func(v []byte, ok bool) int64) resp.Reply {
	v, r := n.hashValue(ctx, args[1])
	if r.IsError() {
		return r
	}
	if v == nil {
		return resp.Int(f(nil, false))
	}
	val, ok, err := object.HashGet(v, args[2])
	if err != nil {
		return corruptHash(args[1], err)
	}
	return resp.Int(f(val, ok))
}

func cmdHLen(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	v, r := n.hashValue(ctx, args[1])
	if r.IsError() || v == nil {
		return orZero(r)
	}
	count, err := object.HashLen(v)
	if err != nil {
		return corruptHash(args[1], err)
	}
	return resp.Int(int64(count))
}

// orZero is r, or 0 when r is no reply (a missing key).
func orZero(r resp.Reply) resp.Reply {
	if r.IsZero() {
		return resp.Int(0)
	}
	return r
}

// cmdHIncrBy adds an integer to a field holding one, as Redis's
// hincrbyCommand: a missing field counts as 0, overflow is refused.
func cmdHIncrBy(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	incr, ok := resp.ParseInt(args[3])
	if !ok {
		return resp.Err(errNotInt.Error())
	}
	var result int64
	err := n.hashWrite(ctx, args[1], func(h *object.HashObject) (bool, error) {
		var v int64
		if old, ok := h.Get(args[2]); ok {
			if v, ok = resp.ParseInt(old); !ok {
				return false, errHashNotInt
			}
		}
		if (incr < 0 && v < 0 && incr < minInt64-v) || (incr > 0 && v > 0 && incr > maxInt64-v) {
			return false, errOverflow
		}
		result = v + incr
		h.Set(args[2], strconv.AppendInt(nil, result, 10))
		return true, nil
	})
	if err != nil {
		return errReply(err)
	}
	return resp.Int(result)
}

// cmdHIncrByFloat adds a float to a field, as Redis's
// hincrbyfloatCommand: in the x87 long double Redis computes in
// (parseLongDouble, formatLongDouble: INCRBYFLOAT's), so the digits stored
// and answered are Redis's.
func cmdHIncrByFloat(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	incr, ok := parseLongDouble(args[3])
	switch {
	case !ok:
		return resp.Err(errNotFloat.Error())
	case incr.IsInf():
		return resp.Err(errIncrNaN.Error())
	}
	var result []byte
	err := n.hashWrite(ctx, args[1], func(h *object.HashObject) (bool, error) {
		value := new(big.Float).SetPrec(longDoubleBits)
		if old, ok := h.Get(args[2]); ok {
			if value, ok = parseLongDouble(old); !ok {
				return false, errHashNotFloat
			}
		}
		sum, err := addLongDouble(value, incr)
		if err != nil {
			return false, err
		}
		result = []byte(sum)
		h.Set(args[2], result)
		return true, nil
	})
	if err != nil {
		return errReply(err)
	}
	return resp.Bulk(result)
}

// cmdHScan answers the whole hash in one reply with cursor 0, as Redis
// does for a hash small enough to be a listpack: COUNT is a hint Redis
// may ignore, and one reply returns every field present throughout, as
// SCAN guarantees. MATCH filters field names.
func cmdHScan(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if _, ok := resp.ParseCursor(args[2]); !ok {
		return resp.ErrInvalidCursor
	}
	h, r := n.readHash(ctx, args[1])
	switch {
	case r.IsError():
		return r
	case h == nil: // Redis answers a missing key before reading the options
		return resp.Array(resp.BulkString("0"), resp.Array())
	}
	a, bad := resp.ParseHScan(args)
	if bad.IsError() {
		return bad
	}
	items := make([]resp.Reply, 0, 2*len(h))
	for _, f := range h {
		if len(a.Match) == 0 || resp.GlobMatch(a.Match, f.Name, false) {
			items = append(items, resp.BulkOwned(f.Name), resp.BulkOwned(f.Value))
		}
	}
	return resp.Array(resp.BulkString("0"), resp.Array(items...))
}

// cmdHRandField is HRANDFIELD key [count [WITHVALUES]], as Redis's
// hrandfieldCommand: one field (or nil); a positive count gives distinct
// fields, at most all of them; a negative one |count| fields, repeats
// allowed.
func cmdHRandField(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args) == 2 {
		h, r := n.readHash(ctx, args[1])
		if r.IsError() || len(h) == 0 {
			return orNil(r)
		}
		return resp.BulkOwned(h[rand.IntN(len(h))].Name)
	}
	count, ok := resp.ParseInt(args[2])
	if !ok {
		return resp.Err(errNotInt.Error())
	}
	withValues := len(args) == 4
	switch {
	case len(args) > 4 || withValues && !bytes.EqualFold(args[3], []byte("withvalues")):
		return resp.ErrSyntax
	case count < -math.MaxInt64:
		return resp.Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	case withValues && (count < -math.MaxInt64/2 || count > math.MaxInt64/2):
		return resp.Err(errValueOutOfRange.Error())
	case count < -maxRandomFields:
		return resp.Errorf("ERR memgest: HRANDFIELD answers at most %d fields", maxRandomFields)
	}
	h, r := n.readHash(ctx, args[1])
	if r.IsError() {
		return r
	}
	picked := randomFields(h, count)
	if !withValues {
		return resp.Array(fieldReplies(picked, true, false)...)
	}
	if cs.proto >= 3 { // pairs, as Redis answers a RESP3 client
		items := make([]resp.Reply, len(picked))
		for i, f := range picked {
			items[i] = resp.Array(resp.BulkOwned(f.Name), resp.BulkOwned(f.Value))
		}
		return resp.Array(items...)
	}
	return resp.Array(fieldReplies(picked, true, true)...)
}

// maxRandomFields bounds a negative HRANDFIELD count, whose reply Redis
// would build however large: a stranger's count must not size memory.
const maxRandomFields = 1 << 20

// randomFields picks count distinct fields of h (all of them, in order,
// when count ≥ len(h)), or -count fields with repeats.
func randomFields(h object.HashObject, count int64) object.HashObject {
	if len(h) == 0 || count == 0 {
		return nil
	}
	if count < 0 {
		out := make(object.HashObject, -count)
		for i := range out {
			out[i] = h[rand.IntN(len(h))]
		}
		return out
	}
	if count >= int64(len(h)) {
		return h // the whole hash, in order, as Redis answers it
	}
	out := append(object.HashObject(nil), h...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:count]
}
