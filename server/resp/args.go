package resp

import (
	"bytes"
	"math"
)

// ParseInt parses b by Redis's string2ll rules, which every integer
// argument goes through: an optional '-', then decimal digits with no
// leading zero (except "0" itself), no '+', no spaces, within int64. "-0"
// is refused.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	d := b
	neg := b[0] == '-'
	if neg {
		d = b[1:]
	}
	if len(d) == 0 || d[0] < '1' || d[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range d {
		// Past (1<<63)/10 the value cannot fit; below it v*10+9 cannot
		// overflow uint64, so the check after the step is exact.
		if c < '0' || c > '9' || v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(v), true // -(1<<63) wraps to MinInt64, as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// IntArg parses an integer argument, failing with [ErrNotInteger].
func IntArg(b []byte) (int64, Reply) {
	n, ok := ParseInt(b)
	if !ok {
		return 0, ErrNotInteger
	}
	return n, Reply{}
}

// ExpireMode says how a SET or GETEX expiration was given.
type ExpireMode uint8

// Expiration modes.
const (
	ExpireNone ExpireMode = iota
	ExpireEX              // seconds from now
	ExpirePX              // milliseconds from now
	ExpireEXAT            // unix time in seconds
	ExpirePXAT            // unix time in milliseconds
)

func (m ExpireMode) seconds() bool  { return m == ExpireEX || m == ExpireEXAT }
func (m ExpireMode) relative() bool { return m == ExpireEX || m == ExpirePX }

// expireAt turns a validated positive value into absolute unix
// milliseconds, reporting false when adding now overflows (Redis's
// "invalid expire time").
func (m ExpireMode) expireAt(v, nowMs int64) (int64, bool) {
	if m.seconds() {
		v *= 1000
	}
	if m.relative() {
		if v > math.MaxInt64-nowMs {
			return 0, false
		}
		v += nowMs
	}
	return v, true
}

// expireToken matches the four expiration options.
func expireToken(opt []byte) ExpireMode {
	switch {
	case equalFold(opt, "ex"):
		return ExpireEX
	case equalFold(opt, "px"):
		return ExpirePX
	case equalFold(opt, "exat"):
		return ExpireEXAT
	case equalFold(opt, "pxat"):
		return ExpirePXAT
	}
	return ExpireNone
}

// SetArgs are the options of SET key value [NX|XX] [GET] [EX s|PX ms|EXAT
// s|PXAT ms|KEEPTTL] [SCHEME name], the last being memgest's: store the
// value under the named scheme.
type SetArgs struct {
	NX, XX, Get, KeepTTL bool
	ExpireMode           ExpireMode
	ExpireValue          int64 // as given: seconds or milliseconds, relative or absolute
	Scheme               string
}

// ParseSet parses args (the whole vector, "SET" key value options...) as
// Redis 7 does: options in any order and any case; repeating an option is
// allowed and the last value wins; NX with XX, two different expiration
// options, KEEPTTL with an expiration, or an option missing its value is
// "ERR syntax error". Only then is the expiration checked: not an integer
// is [ErrNotInteger], zero, negative or too large to convert to
// milliseconds is "ERR invalid expire time in 'set' command". GET with NX
// is accepted, as in Redis 7.
func ParseSet(args [][]byte) (SetArgs, Reply) {
	var a SetArgs
	if len(args) < 3 {
		return a, ErrWrongArity("set")
	}
	var raw []byte
	for j := 3; j < len(args); j++ {
		opt := args[j]
		hasNext := j+1 < len(args)
		mode := expireToken(opt)
		switch {
		case equalFold(opt, "nx") && !a.XX:
			a.NX = true
		case equalFold(opt, "xx") && !a.NX:
			a.XX = true
		case equalFold(opt, "get"):
			a.Get = true
		case equalFold(opt, "keepttl") && a.ExpireMode == ExpireNone:
			a.KeepTTL = true
		case mode != ExpireNone && !a.KeepTTL && hasNext &&
			(a.ExpireMode == ExpireNone || a.ExpireMode == mode):
			a.ExpireMode, raw = mode, args[j+1]
			j++
		case equalFold(opt, "scheme") && hasNext:
			a.Scheme = string(args[j+1])
			j++
		default:
			return SetArgs{}, ErrSyntax
		}
	}
	if a.ExpireMode != ExpireNone {
		v, r := expireValue(raw, a.ExpireMode, "set")
		if r.IsError() {
			return SetArgs{}, r
		}
		a.ExpireValue = v
	}
	return a, Reply{}
}

// expireValue checks a SET or GETEX expiration as getExpireMillisecondsOrReply
// does before the current time is added.
func expireValue(raw []byte, m ExpireMode, cmd string) (int64, Reply) {
	v, ok := ParseInt(raw)
	if !ok {
		return 0, ErrNotInteger
	}
	if v <= 0 || (m.seconds() && v > math.MaxInt64/1000) {
		return 0, ErrInvalidExpire(cmd)
	}
	return v, Reply{}
}

// ExpireAt returns the absolute expiration in unix milliseconds given the
// current time, 0 when there is none (KEEPTTL keeps the old one), and false
// when EX or PX overflows once now is added; reply
// ErrInvalidExpire("set") then. An absolute time in the past is valid:
// Redis stores the value and deletes it at once.
func (a SetArgs) ExpireAt(nowMs int64) (int64, bool) {
	if a.ExpireMode == ExpireNone {
		return 0, true
	}
	return a.ExpireMode.expireAt(a.ExpireValue, nowMs)
}

// GetExArgs are the options of GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST].
type GetExArgs struct {
	ExpireMode ExpireMode
	Persist    bool
	raw        []byte
}

// ParseGetEx parses args ("GETEX" key options...) and reports only syntax
// errors, as Redis does at this point: conflicting or unknown options and
// options missing their value. Redis checks the expiration value after
// looking the key up (a missing key gets null, a wrong type WRONGTYPE
// first), so that check is [GetExArgs.ExpireAt]'s.
func ParseGetEx(args [][]byte) (GetExArgs, Reply) {
	var a GetExArgs
	if len(args) < 2 {
		return a, ErrWrongArity("getex")
	}
	for j := 2; j < len(args); j++ {
		opt := args[j]
		mode := expireToken(opt)
		switch {
		case equalFold(opt, "persist") && a.ExpireMode == ExpireNone:
			a.Persist = true
		case mode != ExpireNone && !a.Persist && j+1 < len(args) &&
			(a.ExpireMode == ExpireNone || a.ExpireMode == mode):
			a.ExpireMode, a.raw = mode, args[j+1]
			j++
		default:
			return GetExArgs{}, ErrSyntax
		}
	}
	return a, Reply{}
}

// ExpireAt validates the expiration and returns it in absolute unix
// milliseconds, or 0 when none was given (or PERSIST). It fails with
// [ErrNotInteger] or "ERR invalid expire time in 'getex' command". The
// value shares memory with the args given to ParseGetEx, so call it while
// they are alive.
func (a GetExArgs) ExpireAt(nowMs int64) (int64, Reply) {
	if a.ExpireMode == ExpireNone {
		return 0, Reply{}
	}
	v, r := expireValue(a.raw, a.ExpireMode, "getex")
	if r.IsError() {
		return 0, r
	}
	at, ok := a.ExpireMode.expireAt(v, nowMs)
	if !ok {
		return 0, ErrInvalidExpire("getex")
	}
	return at, Reply{}
}

// ExpireArgs are the parsed EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT
// arguments.
type ExpireArgs struct {
	NX, XX, GT, LT bool
	// At is the new expiration in absolute unix milliseconds. It may be in
	// the past or negative: Redis then deletes the key.
	At int64
}

// ParseExpire parses args ("EXPIRE" key seconds [NX|XX|GT|LT]..., or the
// PEXPIRE, EXPIREAT, PEXPIREAT forms, chosen by args[0]) in Redis 7's
// order: an unknown option is "ERR Unsupported option <opt>"; NX with XX,
// GT or LT is "ERR NX and XX, GT or LT options at the same time are not
// compatible"; GT with LT is "ERR GT and LT options at the same time are
// not compatible"; then the time must be an integer ([ErrNotInteger]) that
// converts to milliseconds and adds to nowMs without overflow ("ERR invalid
// expire time in 'expire' command"). Negative times are accepted.
func ParseExpire(args [][]byte, nowMs int64) (ExpireArgs, Reply) {
	var a ExpireArgs
	if len(args) < 3 {
		name := "expire"
		if len(args) > 0 {
			name = string(args[0])
		}
		return a, ErrWrongArity(name)
	}
	seconds, base, name, ok := expireCommand(args[0], nowMs)
	if !ok {
		return a, ErrUnknownCommand(string(args[0]), args[1:])
	}
	if r := a.parseConditions(args[3:]); r.IsError() {
		return ExpireArgs{}, r
	}
	when, r := IntArg(args[2])
	if r.IsError() {
		return ExpireArgs{}, r
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return ExpireArgs{}, ErrInvalidExpire(name)
		}
		when *= 1000
	}
	if when > math.MaxInt64-base {
		return ExpireArgs{}, ErrInvalidExpire(name)
	}
	a.At = when + base
	return a, Reply{}
}

// expireCommand tells the unit and base time of an EXPIRE-family command.
func expireCommand(cmd []byte, nowMs int64) (seconds bool, base int64, name string, ok bool) {
	switch {
	case equalFold(cmd, "expire"):
		return true, nowMs, "expire", true
	case equalFold(cmd, "pexpire"):
		return false, nowMs, "pexpire", true
	case equalFold(cmd, "expireat"):
		return true, 0, "expireat", true
	case equalFold(cmd, "pexpireat"):
		return false, 0, "pexpireat", true
	}
	return false, 0, "", false
}

func (a *ExpireArgs) parseConditions(opts [][]byte) Reply {
	for _, opt := range opts {
		switch {
		case equalFold(opt, "nx"):
			a.NX = true
		case equalFold(opt, "xx"):
			a.XX = true
		case equalFold(opt, "gt"):
			a.GT = true
		case equalFold(opt, "lt"):
			a.LT = true
		default:
			return ErrUnsupportedOption(opt)
		}
	}
	if a.NX && (a.XX || a.GT || a.LT) {
		return Err("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if a.GT && a.LT {
		return Err("ERR GT and LT options at the same time are not compatible")
	}
	return Reply{}
}

// ScanArgs are the parsed SCAN arguments.
type ScanArgs struct {
	Cursor uint64
	// Match is the MATCH pattern, nil when absent or "*" (which Redis does
	// not even test: note that GlobMatch("*", "") is false). It shares
	// memory with args.
	Match []byte
	// Count is the COUNT hint, 10 by default.
	Count int
	// Type is the TYPE filter as given; Redis compares it with a key's
	// type name ignoring case and does not reject unknown names.
	Type string
	// Cluster is memgest's CLUSTER option: walk every node's keys, not
	// only those of the slots the receiving node serves (decision 0004).
	Cluster bool
}

// ClusterOption is the token that turns SCAN, DBSIZE, FLUSHALL and FLUSHDB
// from the receiving node's slots to the whole cluster (decision 0004).
// No Redis 7 form of these commands takes a lone CLUSTER argument.
const ClusterOption = "cluster"

// ParseScan parses args ("SCAN" cursor [MATCH p] [COUNT n] [TYPE t]
// [CLUSTER]) as Redis 7 does, plus memgest's CLUSTER flag. The cursor is
// read like C's strtoul, which Redis uses: an optional sign (a negative
// cursor wraps around), decimal digits, nothing after them, and no leading
// space; otherwise "ERR invalid cursor". Options may repeat (the last
// wins) in any order; a COUNT that is not an integer is [ErrNotInteger],
// below 1 or any other option is "ERR syntax error".
func ParseScan(args [][]byte) (ScanArgs, Reply) {
	if len(args) < 2 {
		return ScanArgs{}, ErrWrongArity("scan")
	}
	return parseScan(args[1], args[2:], true)
}

// ParseHScan parses HSCAN key cursor [MATCH p] [COUNT n]: SCAN's cursor and
// options, without TYPE and CLUSTER.
func ParseHScan(args [][]byte) (ScanArgs, Reply) {
	if len(args) < 3 {
		return ScanArgs{}, ErrWrongArity("hscan")
	}
	return parseScan(args[2], args[3:], false)
}

// parseScan reads a cursor and the options after it; keyspace allows
// SCAN's TYPE and CLUSTER.
func parseScan(cursorArg []byte, opts [][]byte, keyspace bool) (ScanArgs, Reply) {
	a := ScanArgs{Count: 10}
	cursor, ok := parseCursor(cursorArg)
	if !ok {
		return ScanArgs{}, ErrInvalidCursor
	}
	a.Cursor = cursor
	for i := 0; i < len(opts); i += 2 {
		opt, more := opts[i], len(opts)-i >= 2
		if keyspace && equalFold(opt, ClusterOption) {
			a.Cluster = true
			i-- // a flag: no value follows
			continue
		}
		switch {
		case equalFold(opt, "count") && more:
			n, r := IntArg(opts[i+1])
			if r.IsError() {
				return ScanArgs{}, r
			}
			if n < 1 {
				return ScanArgs{}, ErrSyntax
			}
			a.Count = int(n)
		case equalFold(opt, "match") && more:
			a.Match = opts[i+1]
			if len(a.Match) == 1 && a.Match[0] == '*' {
				a.Match = nil
			}
		case keyspace && equalFold(opt, "type") && more:
			a.Type = string(opts[i+1])
		default:
			return ScanArgs{}, ErrSyntax
		}
	}
	return a, Reply{}
}

// ParseDBSize parses args ("DBSIZE" [CLUSTER]) and says whether CLUSTER
// was given; any other argument is Redis's arity error, since Redis's
// DBSIZE takes none.
func ParseDBSize(args [][]byte) (cluster bool, bad Reply) {
	return parseClusterTail(args, 1)
}

// ParseKeys parses args ("KEYS" pattern [CLUSTER]) likewise.
func ParseKeys(args [][]byte) (cluster bool, bad Reply) {
	return parseClusterTail(args, 2)
}

// parseClusterTail reads a command of n arguments that memgest lets end
// with CLUSTER; any other count is the arity error Redis gives.
func parseClusterTail(args [][]byte, n int) (cluster bool, bad Reply) {
	switch {
	case len(args) == n:
		return false, Reply{}
	case len(args) == n+1 && equalFold(args[n], ClusterOption):
		return true, Reply{}
	}
	return false, ErrWrongArity(string(args[0]))
}

// ParseFlush parses args ("FLUSHALL" or "FLUSHDB" [ASYNC|SYNC] [CLUSTER],
// in either order) and says whether CLUSTER was given. Like Redis, it
// takes at most one of ASYNC and SYNC; anything else, or an option given
// twice, is "ERR syntax error".
func ParseFlush(args [][]byte) (cluster bool, bad Reply) {
	var mode bool
	for _, a := range args[1:] {
		switch {
		case !cluster && equalFold(a, ClusterOption):
			cluster = true
		case !mode && (equalFold(a, "async") || equalFold(a, "sync")):
			mode = true
		default:
			return false, ErrSyntax
		}
	}
	return cluster, Reply{}
}

// ParseCursor reads a SCAN-family cursor as Redis does (parseCursor).
func ParseCursor(b []byte) (uint64, bool) { return parseCursor(b) }

// parseCursor reads b as strtoul(b, &end, 10) with Redis's checks: the
// first byte is not a space, the whole string converts and it fits. C reads
// up to the first NUL; an empty string is cursor 0.
func parseCursor(b []byte) (uint64, bool) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, true
	}
	if isCSpace(b[0]) {
		return 0, false
	}
	d, neg := b, false
	if d[0] == '+' || d[0] == '-' {
		d, neg = d[1:], d[0] == '-'
	}
	if len(d) == 0 {
		return 0, false // no digits: strtoul stops at the sign
	}
	var v uint64
	for _, c := range d {
		if c < '0' || c > '9' || v > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}
