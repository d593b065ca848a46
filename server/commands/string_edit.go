package commands

import (
	"context"
	"math/big"
	"strings"

	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// The string commands that edit a value where it lies or compare two
// (issue 28): SETRANGE, INCRBYFLOAT and LCS. Each is a read-modify-write
// (or a read) of the whole value through the key's scheme, so it works the
// same on every scheme, split and packed ones included, and a written key
// keeps its scheme and TTL.

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("setrange", data(cmdSetRange))
	register("incrbyfloat", data(cmdIncrByFloat))
	register("lcs", &command{run: cmdLCS, fanout: crossSlot, needsFormed: true})
}

var errOffsetRange = resp.Err("ERR offset is out of range")

// cmdSetRange overwrites the value from offset on, zero-padding a shorter
// one, and answers the new length, with setrangeCommand's checks in its
// order: offset, type, an empty patch (no write), the size limit.
func cmdSetRange(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	offset, ok := resp.ParseInt(args[2])
	if !ok {
		return resp.Err(errNotInt.Error())
	}
	if offset < 0 {
		return errOffsetRange
	}
	patch := args[3]
	var bad resp.Reply
	var size int64
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		switch {
		case notString(cur):
			bad = resp.ErrWrongType
			return nil, nil
		case len(patch) == 0:
			size = int64(len(cur.Value)) // 0 for a missing key, which stays missing
			return nil, nil
		case offset > n.Cfg.MaxValueSize-int64(len(patch)):
			bad = resp.Err(errTooBig.Error())
			return nil, nil
		}
		v := spliced(cur.Value, int(offset), patch)
		if r, ok := n.checkStringValue(v); !ok {
			bad = r
			return nil, nil
		}
		size = int64(len(v))
		return n.ValueOp(cur, args[1], v, 0, true, nil), nil
	})
	if bad.IsError() {
		return bad
	}
	if err != nil {
		return errReply(err)
	}
	return resp.Int(size)
}

// spliced is a new value: old with patch written at offset, zeros filling
// any gap. old is never modified (a read's value may be the store's).
func spliced(old []byte, offset int, patch []byte) []byte {
	size := max(len(old), offset+len(patch))
	v := bigcopy.Append(make([]byte, 0, size), old)
	v = v[:size] // a fresh slice's tail is zero
	copy(v[offset:], patch)
	return v
}

// cmdIncrByFloat adds a decimal increment to the value, as Redis does in
// long double: both parsed by strtold's rules (string2ld), added, and
// printed with "%.17Lf" less trailing zeros. A big.Float of 64 bits of
// mantissa is the x87 long double Redis computes in on amd64.
func cmdIncrByFloat(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var out []byte
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		if notString(cur) {
			return nil, errWrongType
		}
		value := new(big.Float).SetPrec(longDoubleBits)
		if cur.Exists {
			var ok bool
			if value, ok = parseLongDouble(cur.Value); !ok {
				return nil, errNotFloat
			}
		}
		incr, ok := parseLongDouble(args[2])
		if !ok {
			return nil, errNotFloat
		}
		sum, err := addLongDouble(value, incr)
		if err != nil {
			return nil, err
		}
		out = []byte(sum)
		return n.ValueOp(cur, args[1], out, 0, true, nil), nil
	})
	if err != nil {
		return errReply(err)
	}
	return resp.BulkOwned(out)
}

// addLongDouble is value + incr in long double, as INCRBYFLOAT and
// HINCRBYFLOAT compute it, printed as Redis prints it; an infinite
// operand or a sum past the long double's range is errFloatInfinite.
func addLongDouble(value, incr *big.Float) (string, error) {
	if value.IsInf() || incr.IsInf() {
		return "", errFloatInfinite // inf + anything is inf or NaN
	}
	sum := new(big.Float).SetPrec(longDoubleBits).Add(value, incr)
	if sum.MantExp(nil) > longDoubleMaxExp {
		return "", errFloatInfinite
	}
	return formatLongDouble(sum), nil
}

// The x87 80-bit long double: 64 bits of mantissa, finite below 2^16384;
// its least subnormal is 2^-16445, to which strtold rounds anything from
// half of it (2^-16446) up.
const (
	longDoubleBits   = 64
	longDoubleMaxExp = 16384
	longDoubleMinExp = -16445
	// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: string2ld
	// refuses a string this long or longer.
	maxLongDoubleChars = 5 * 1024
)

// parseLongDouble is Redis's string2ld: strtold over the whole string, no
// leading space, NaN refused, overflow and underflow to zero refused;
// "inf" and "infinity" (any case, signed) are infinite values.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return nil, false
	}
	s := string(b)
	unsigned := strings.TrimLeft(s, "+-")
	if len(s)-len(unsigned) > 1 {
		return nil, false
	}
	if u := strings.ToLower(unsigned); u == "inf" || u == "infinity" {
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	base := 10
	if l := strings.ToLower(unsigned); strings.HasPrefix(l, "0x") {
		base = 0 // strtold's hexadecimal floats
	}
	if strings.ContainsAny(s, "_ \t\r\n\v\f") || (base == 10 && strings.ContainsAny(s, "pP")) {
		return nil, false // Go's separators and spaces; p is hexadecimal only
	}
	f, _, err := new(big.Float).SetPrec(longDoubleBits).Parse(s, base)
	if err != nil {
		return nil, false
	}
	if exp := f.MantExp(nil); f.Sign() != 0 && (exp > longDoubleMaxExp || exp < longDoubleMinExp) {
		return nil, false // strtold's ERANGE: overflow to HUGE_VALL or underflow to 0
	}
	return f, true
}

// formatLongDouble is ld2string's LD_STR_HUMAN: "%.17Lf" without trailing
// zeros after the point (nor the point), and "-0" as "0".
func formatLongDouble(f *big.Float) string {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// crossSlot is the fanout of a command whose keys must share a slot, as
// in Redis Cluster: keys on two coordinators are in two slots.
func crossSlot(*Server, context.Context, *connState, [][]byte) resp.Reply {
	return errCrossSlot
}

// sameSlot answers CROSSSLOT unless every key hashes to one slot: the
// command's keys share a coordinator (the dispatcher saw to it), but Redis
// Cluster asks for one slot, which keeps the keys together when slots move.
func sameSlot(keys ...[]byte) (resp.Reply, bool) {
	for _, k := range keys[1:] {
		if keyslot.Of(k) != keyslot.Of(keys[0]) {
			return errCrossSlot, false
		}
	}
	return resp.Reply{}, true
}

// lcsArgs are LCS's options.
type lcsArgs struct {
	getLen, getIdx, withMatchLen bool
	minMatchLen                  int64
}

// parseLCS reads LCS's options as lcsCommand does: a MINMATCHLEN that is
// not an integer is ERR not an integer, a negative one is 0, anything
// else unknown is a syntax error, and LEN with IDX is refused.
func parseLCS(args [][]byte) (lcsArgs, resp.Reply) {
	var a lcsArgs
	for j := 3; j < len(args); j++ {
		opt := strings.ToLower(string(args[j]))
		switch {
		case opt == "idx":
			a.getIdx = true
		case opt == "len":
			a.getLen = true
		case opt == "withmatchlen":
			a.withMatchLen = true
		case opt == "minmatchlen" && j+1 < len(args):
			v, ok := resp.ParseInt(args[j+1])
			if !ok {
				return a, resp.Err(errNotInt.Error())
			}
			a.minMatchLen = max(v, 0)
			j++
		default:
			return a, resp.ErrSyntax
		}
	}
	if a.getLen && a.getIdx {
		return a, resp.Err("ERR If you want both the length and indexes, please just use IDX.")
	}
	return a, resp.Reply{}
}

// cmdLCS is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]:
// the longest common subsequence of two string values (a missing key is
// ""), its length, or its matching ranges, computed as lcsCommand does.
func cmdLCS(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if r, ok := sameSlot(args[1], args[2]); !ok {
		return r
	}
	var vals [2][]byte
	for i, key := range args[1:3] {
		cur, err := n.Get(ctx, key)
		if err != nil {
			return errReply(err)
		}
		if notString(cur) {
			return resp.Err("ERR The specified keys must contain string values")
		}
		n.Accessed(key, cur)
		vals[i] = cur.Value
	}
	a, bad := parseLCS(args)
	if bad.IsError() {
		return bad
	}
	if size := (uint64(len(vals[0])) + 1) * (uint64(len(vals[1])) + 1) * 4; size > uint64(n.Cfg.MaxValueSize) {
		return resp.Err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
	}
	return lcsReply(vals[0], vals[1], a)
}

// lcsReply fills lcsCommand's table and walks it back from the end,
// emitting the matched ranges as it finds them (last first).
func lcsReply(x, y []byte, opt lcsArgs) resp.Reply {
	alen, blen := len(x), len(y)
	table := make([]uint32, (alen+1)*(blen+1))
	at := func(i, j int) *uint32 { return &table[j+i*(blen+1)] }
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if x[i-1] == y[j-1] {
				*at(i, j) = *at(i-1, j-1) + 1
			} else {
				*at(i, j) = max(*at(i-1, j), *at(i, j-1))
			}
		}
	}
	total := int(*at(alen, blen))
	if opt.getLen {
		return resp.Int(int64(total))
	}
	result := make([]byte, total)
	var matches []resp.Reply
	idx := total
	aStart, aEnd, bStart, bEnd := alen, 0, 0, 0 // aStart == alen: no range open
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if x[i-1] == y[j-1] {
			result[idx-1] = x[i-1]
			switch {
			case aStart == alen:
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			case aStart == i && bStart == j:
				aStart, bStart = aStart-1, bStart-1
			default:
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if *at(i-1, j) > *at(i, j-1) {
				i--
			} else {
				j--
			}
			emit = aStart != alen
		}
		if !emit {
			continue
		}
		if matchLen := int64(aEnd - aStart + 1); opt.getIdx && (opt.minMatchLen == 0 || matchLen >= opt.minMatchLen) {
			m := []resp.Reply{
				resp.Array(resp.Int(int64(aStart)), resp.Int(int64(aEnd))),
				resp.Array(resp.Int(int64(bStart)), resp.Int(int64(bEnd))),
			}
			if opt.withMatchLen {
				m = append(m, resp.Int(matchLen))
			}
			matches = append(matches, resp.Array(m...))
		}
		aStart = alen
	}
	if opt.getIdx {
		return resp.Map(resp.BulkString("matches"), resp.Array(matches...),
			resp.BulkString("len"), resp.Int(int64(total)))
	}
	return resp.BulkOwned(result)
}
