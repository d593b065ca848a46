package resp

import (
	"slices"
	"strings"
)

// CommandSpec describes one command or subcommand as Redis 7.2 reports it
// in COMMAND INFO and COMMAND DOCS. Specs come from the package's table and
// must not be modified.
type CommandSpec struct {
	// Name is the lower-case full name: "get", "client|list" for a
	// subcommand, "scheme.of" for a dotted memgest command.
	Name string
	// Arity counts the command name (and the subcommand name): positive is
	// exact, negative a minimum.
	Arity int
	// Flags are the command flags in the order Redis prints them
	// ("write", "readonly", "denyoom", ..., "fast", "no_auth", ...).
	Flags []string
	// FirstKey, LastKey and Step are the legacy key range: positions count
	// from the command name at 0; a negative LastKey counts back from the
	// end (-1 is the last argument); FirstKey 0 means no keys.
	FirstKey, LastKey, Step int
	// ACLCategories are the categories with their "@", explicit and implied
	// by the flags, in Redis's order.
	ACLCategories []string
	// Tips are Redis's command tips, such as "request_policy:multi_shard".
	Tips []string
	// KeySpecs are the key specifications of COMMAND INFO's ninth field.
	KeySpecs []KeySpec
	// Subcommands of a container command, sorted by name; Parent is the
	// container of a subcommand.
	Subcommands []*CommandSpec
	Parent      *CommandSpec
	// Documentation for COMMAND DOCS. Group is Redis's group ("string",
	// "generic", "connection", "server", "cluster") or "memgest".
	Group, Summary, Since, Complexity string
	History                           [][2]string // (version, change) pairs
	DocFlags                          []string    // "deprecated"
	DeprecatedSince, ReplacedBy       string

	flags Flag
	subs  map[string]*CommandSpec // subcommands by lower-case short name
	index int                     // position in allSpecs (Index)
}

// Index is the spec's position among every command and subcommand
// (0 ≤ Index < SpecCount), for per-command tables such as INFO
// commandstats' counters.
func (spec *CommandSpec) Index() int { return spec.index }

// SpecCount is the number of commands and subcommands in the table.
func SpecCount() int { return len(allSpecs) }

// KeySpec is a key specification whose begin_search is an index and whose
// find_keys is a range, the only forms memgest's commands need.
type KeySpec struct {
	Notes string
	// Flags such as "RO", "RW", "OW", "RM", "access", "update", "insert",
	// "delete", "variable_flags", in Redis's order.
	Flags []string
	// BeginIndex is the argument position of the first key.
	BeginIndex int
	// LastKey is relative to BeginIndex (0 for a single key, -1 for the
	// last argument); KeyStep and Limit as in Redis.
	LastKey, KeyStep, Limit int
}

// Flag is a command flag bit; [CommandSpec.Has] tests them without string
// comparisons.
type Flag uint32

// Command flags, in the order Redis prints them.
const (
	FlagWrite Flag = 1 << iota
	FlagReadOnly
	FlagDenyOOM
	FlagModule
	FlagAdmin
	FlagPubSub
	FlagNoScript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagAsking
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagNoMandatoryKeys
	FlagNoAsyncLoading
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
)

var flagNames = []string{
	"write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
	"blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking",
	"fast", "no_auth", "may_replicate", "no_mandatory_keys",
	"no_async_loading", "no_multi", "movablekeys", "allow_busy",
}

// Has reports whether the command carries every flag in f.
func (spec *CommandSpec) Has(f Flag) bool { return spec.flags&f == f }

// HasFlag reports whether the command carries the named flag ("write").
func (spec *CommandSpec) HasFlag(name string) bool {
	i := slices.Index(flagNames, name)
	return i >= 0 && spec.Has(1<<i)
}

// Keyless reports whether the command takes no key arguments (PING, SCAN,
// DBSIZE, SCHEME LIST): memgest routes it by its tips or runs it locally.
func (spec *CommandSpec) Keyless() bool { return spec.FirstKey == 0 }

// MultiKey reports whether the command may take more than one key (MGET,
// MSET, DEL, EXISTS, UNLINK, MSETNX).
func (spec *CommandSpec) MultiKey() bool {
	return spec.FirstKey > 0 && spec.Step > 0 && (spec.LastKey < 0 || spec.LastKey > spec.FirstKey)
}

// CheckArity reports whether argc arguments (counting the command name and
// any subcommand name) satisfy the command's arity.
func CheckArity(spec *CommandSpec, argc int) bool {
	if spec.Arity >= 0 {
		return argc == spec.Arity
	}
	return argc >= -spec.Arity
}

// Keys returns the key arguments of args (the full argument vector, with
// the command name at 0) by the legacy key range. The keys share args'
// memory. Positions past the end of args are skipped, so a malformed vector
// yields fewer keys rather than a panic.
func (spec *CommandSpec) Keys(args [][]byte) [][]byte {
	return spec.AppendKeys(nil, args)
}

// AppendKeys is [CommandSpec.Keys] appending to dst, for callers that reuse
// a buffer.
func (spec *CommandSpec) AppendKeys(dst [][]byte, args [][]byte) [][]byte {
	first, last := spec.keyRange(len(args))
	for i := first; i <= last; i += spec.Step {
		dst = append(dst, args[i])
	}
	return dst
}

// keyRange returns the first and last key positions for argc arguments,
// clamped to the vector; last < first when there are none.
func (spec *CommandSpec) keyRange(argc int) (first, last int) {
	if spec.FirstKey <= 0 || spec.Step <= 0 {
		return 1, 0
	}
	last = spec.LastKey
	if last < 0 {
		last += argc
	}
	return spec.FirstKey, min(last, argc-1)
}

// Subcommand finds the subcommand named name (any case) of a container,
// without allocating.
func (spec *CommandSpec) Subcommand(name []byte) (*CommandSpec, bool) {
	var buf [maxNameLen]byte
	lname, ok := lowerInto(buf[:], name)
	if !ok {
		return nil, false
	}
	sub, ok := spec.subs[string(lname)]
	return sub, ok
}

// maxNameLen bounds names Lookup lower-cases on the stack; no command is
// longer.
const maxNameLen = 32

func lowerInto(buf []byte, name []byte) ([]byte, bool) {
	if len(name) > len(buf) {
		return nil, false
	}
	for i, c := range name {
		buf[i] = lower(c)
	}
	return buf[:len(name)], true
}

// Lookup finds the top-level command named name, in any case, without
// allocating.
func Lookup(name []byte) (*CommandSpec, bool) {
	var buf [maxNameLen]byte
	lname, ok := lowerInto(buf[:], name)
	if !ok {
		return nil, false
	}
	spec, ok := commandIndex[string(lname)]
	return spec, ok
}

// lookupFullName finds a command or, for "container|sub", a subcommand, as
// COMMAND INFO and COMMAND DOCS accept.
func lookupFullName(name string) (*CommandSpec, bool) {
	name = strings.ToLower(name)
	if spec, ok := commandIndex[name]; ok {
		return spec, true
	}
	spec, ok := subcommandIndex[name]
	return spec, ok
}

// Commands returns every top-level command sorted by name. The slice is
// shared; do not modify it.
func Commands() []*CommandSpec { return commandList }

// Invoked is the command or subcommand args names, found as Resolve finds
// it but without checking arity, or nil when args names none: after
// Resolve refused args, the spec whose arity they failed (INFO
// commandstats counts it as rejected).
func Invoked(args [][]byte) *CommandSpec { return resolveQuiet(args) }

// Resolve finds the command args invokes and makes the checks Redis makes
// before running it, returning the spec to run or the error reply to send:
// unknown command, unknown subcommand of a container, then arity. A
// container called without a subcommand resolves to the container itself,
// so "CLIENT" alone fails its arity and "COMMAND" alone runs COMMAND.
func Resolve(args [][]byte) (*CommandSpec, Reply) {
	if len(args) == 0 {
		return nil, ErrUnknownCommand("", nil)
	}
	spec, ok := Lookup(args[0])
	if !ok {
		return nil, ErrUnknownCommand(string(args[0]), args[1:])
	}
	if len(spec.Subcommands) > 0 && len(args) >= 2 {
		sub, ok := spec.Subcommand(args[1])
		if !ok {
			return nil, ErrUnknownSubcommand(string(args[0]), string(args[1]))
		}
		spec = sub
	}
	if !CheckArity(spec, len(args)) {
		return nil, ErrWrongArity(spec.Name)
	}
	return spec, Reply{}
}
