package resp

import (
	"slices"
	"strings"
)

// The table transcribes Redis 7.2's command metadata (src/commands/*.json
// of 7.2.6, the last 7.2 release checked, as COMMAND INFO and COMMAND DOCS
// report it) for the commands memgest serves, plus memgest's SCHEME.
// Containers list only the subcommands memgest implements or is likely
// to. TestCommandTableAgainstRedis compares the rows with what a real
// Redis answers (testdata/redis-commands.json).

// ACL categories, in the order Redis prints them.
type aclCat uint32

const (
	aclKeyspace aclCat = 1 << iota
	aclRead
	aclWrite
	aclSet
	aclSortedSet
	aclList
	aclHash
	aclString
	aclBitmap
	aclHyperLogLog
	aclGeo
	aclStream
	aclPubSub
	aclAdmin
	aclFast
	aclSlow
	aclBlocking
	aclDangerous
	aclConnection
	aclTransaction
	aclScripting
)

var aclNames = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast",
	"slow", "blocking", "dangerous", "connection", "transaction", "scripting",
}

// impliedACL adds the categories Redis derives from flags
// (setImplicitACLCategories): write, read, admin+dangerous, pubsub, fast,
// blocking, and slow for whatever is not fast.
func impliedACL(f Flag, explicit aclCat) aclCat {
	c := explicit
	if f&FlagWrite != 0 {
		c |= aclWrite
	}
	if f&FlagReadOnly != 0 && c&aclScripting == 0 {
		c |= aclRead
	}
	if f&FlagAdmin != 0 {
		c |= aclAdmin | aclDangerous
	}
	if f&FlagPubSub != 0 {
		c |= aclPubSub
	}
	if f&FlagFast != 0 {
		c |= aclFast
	}
	if f&FlagBlocking != 0 {
		c |= aclBlocking
	}
	if c&aclFast == 0 {
		c |= aclSlow
	}
	return c
}

// def is one table row; init turns rows into CommandSpecs.
type def struct {
	name              string
	arity             int
	flags             Flag
	acl               aclCat // explicit categories only
	first, last, step int
	tips              []string
	keys              []KeySpec
	group, since      string
	complexity        string
	summary           string
	history           [][2]string
	deprecated        string // deprecated since
	replacedBy        string
	docFlags          []string // besides "deprecated", which deprecated implies
	subs              []def
}

// ks builds a key spec starting at position begin with find_keys range
// (lastkey, keystep, limit 0).
func ks(begin, lastKey, step int, flags ...string) KeySpec {
	return KeySpec{Flags: flags, BeginIndex: begin, LastKey: lastKey, KeyStep: step}
}

// Frequently repeated texts.
const (
	o1          = "O(1)"
	depends     = "Depends on subcommand."
	helpSummary = "Returns helpful text about the different subcommands."
	added7      = "Added options: `NX`, `XX`, `GT` and `LT`."
	nondet      = "nondeterministic_output"
	nondetOrder = "nondeterministic_output_order"
)

var (
	tipsMultiShardSum = []string{"request_policy:multi_shard", "response_policy:agg_sum"}
	tipsAllShardsOK   = []string{"request_policy:all_shards", "response_policy:all_succeeded"}
	tipsAllNodesOK    = []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
	histExpire        = [][2]string{{"7.0.0", added7}}
	histFlush         = [][2]string{
		{"4.0.0", "Added the `ASYNC` flushing mode modifier."},
		{"6.2.0", "Added the `SYNC` flushing mode modifier."},
	}
	histTTL = [][2]string{{"2.8.0", "Added the -2 reply."}}
)

// Flag sets shared by many rows.
const (
	fRF    = FlagReadOnly | FlagFast
	fWF    = FlagWrite | FlagFast
	fWDF   = FlagWrite | FlagDenyOOM | FlagFast
	fLS    = FlagLoading | FlagStale
	fLSF   = FlagLoading | FlagStale | FlagFast
	fNLS   = FlagNoScript | FlagLoading | FlagStale
	fANLS  = FlagAdmin | FlagNoScript | FlagLoading | FlagStale
	fConn  = FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy
	single = 0 // LastKey of a single-key range key spec
)

var stringDefs = []def{
	{name: "get", arity: 2, flags: fRF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "string", since: "1.0.0", complexity: o1,
		summary: "Returns the string value of a key."},
	{name: "set", arity: -3, flags: FlagWrite | FlagDenyOOM, acl: aclString, first: 1, last: 1, step: 1,
		keys: []KeySpec{{Notes: "RW and ACCESS due to the optional `GET` argument",
			Flags: []string{"RW", "access", "update", "variable_flags"}, BeginIndex: 1, KeyStep: 1}},
		group: "string", since: "1.0.0", complexity: o1,
		summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
		history: [][2]string{
			{"2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."},
			{"6.0.0", "Added the `KEEPTTL` option."},
			{"6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."},
			{"7.0.0", "Allowed the `NX` and `GET` options to be used together."},
		}},
	{name: "getdel", arity: 2, flags: fWF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "delete")},
		group: "string", since: "6.2.0", complexity: o1,
		summary: "Returns the string value of a key after deleting the key."},
	{name: "getex", arity: -2, flags: fWF, acl: aclString, first: 1, last: 1, step: 1,
		keys: []KeySpec{{Notes: "RW and UPDATE because it changes the TTL",
			Flags: []string{"RW", "access", "update"}, BeginIndex: 1, KeyStep: 1}},
		group: "string", since: "6.2.0", complexity: o1,
		summary: "Returns the string value of a key after setting its expiration time."},
	{name: "mget", arity: -2, flags: fRF, acl: aclString, first: 1, last: -1, step: 1,
		tips:  []string{"request_policy:multi_shard"},
		keys:  []KeySpec{ks(1, -1, 1, "RO", "access")},
		group: "string", since: "1.0.0", complexity: "O(N) where N is the number of keys to retrieve.",
		summary: "Atomically returns the string values of one or more keys."},
	{name: "mset", arity: -3, flags: FlagWrite | FlagDenyOOM, acl: aclString, first: 1, last: -1, step: 2,
		tips:  []string{"request_policy:multi_shard", "response_policy:all_succeeded"},
		keys:  []KeySpec{ks(1, -1, 2, "OW", "update")},
		group: "string", since: "1.0.1", complexity: "O(N) where N is the number of keys to set.",
		summary: "Atomically creates or modifies the string values of one or more keys."},
	{name: "msetnx", arity: -3, flags: FlagWrite | FlagDenyOOM, acl: aclString, first: 1, last: -1, step: 2,
		keys:  []KeySpec{ks(1, -1, 2, "OW", "insert")},
		group: "string", since: "1.0.1", complexity: "O(N) where N is the number of keys to set.",
		summary: "Atomically modifies the string values of one or more keys only when all keys don't exist."},
	{name: "incr", arity: 2, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "update")},
		group: "string", since: "1.0.0", complexity: o1,
		summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
	{name: "incrby", arity: 3, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "update")},
		group: "string", since: "1.0.0", complexity: o1,
		summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
	{name: "decr", arity: 2, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "update")},
		group: "string", since: "1.0.0", complexity: o1,
		summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
	{name: "decrby", arity: 3, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "update")},
		group: "string", since: "1.0.0", complexity: o1,
		summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."},
	{name: "append", arity: 3, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "insert")},
		group: "string", since: "2.0.0",
		complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
		summary:    "Appends a string to the value of a key. Creates the key if it doesn't exist."},
	{name: "strlen", arity: 2, flags: fRF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO")},
		group: "string", since: "2.2.0", complexity: o1,
		summary: "Returns the length of a string value."}, {name: "setnx", arity: 3, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "OW", "insert")},
		group: "string", since: "1.0.0", complexity: o1, deprecated: "2.6.12", replacedBy: "`SET` with the `NX` argument",
		summary: "Set the string value of a key only when the key doesn't exist."},
	{name: "setex", arity: 4, flags: FlagWrite | FlagDenyOOM, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "OW", "update")},
		group: "string", since: "2.0.0", complexity: o1, deprecated: "2.6.12", replacedBy: "`SET` with the `EX` argument",
		summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."},
	{name: "psetex", arity: 4, flags: FlagWrite | FlagDenyOOM, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "OW", "update")},
		group: "string", since: "2.6.0", complexity: o1, deprecated: "2.6.12", replacedBy: "`SET` with the `PX` argument",
		summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."},
	{name: "getset", arity: 3, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "update")},
		group: "string", since: "1.0.0", complexity: o1, deprecated: "6.2.0", replacedBy: "`SET` with the `!GET` argument",
		summary: "Returns the previous string value of a key after setting it to a new value."},
	{name: "getrange", arity: 4, flags: FlagReadOnly, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "string", since: "2.4.0",
		complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
		summary:    "Returns a substring of the string stored at a key."},
	{name: "substr", arity: 4, flags: FlagReadOnly, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "string", since: "1.0.0", deprecated: "2.0.0", replacedBy: "`GETRANGE`",
		complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
		summary:    "Returns a substring from a string value."},
	{name: "setrange", arity: 4, flags: FlagWrite | FlagDenyOOM, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "update")},
		group: "string", since: "2.2.0",
		complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
		summary:    "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."},
	{name: "incrbyfloat", arity: 3, flags: fWDF, acl: aclString, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "update")},
		group: "string", since: "2.6.0", complexity: o1,
		summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
	{name: "lcs", arity: -3, flags: FlagReadOnly, acl: aclString, first: 1, last: 2, step: 1,
		keys:  []KeySpec{ks(1, 1, 1, "RO", "access")},
		group: "string", since: "7.0.0", complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
		summary: "Finds the longest common substring."},
}

var genericDefs = []def{
	{name: "del", arity: -2, flags: FlagWrite, acl: aclKeyspace, first: 1, last: -1, step: 1,
		tips: tipsMultiShardSum, keys: []KeySpec{ks(1, -1, 1, "RM", "delete")},
		group: "generic", since: "1.0.0",
		complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
		summary:    "Deletes one or more keys."},
	{name: "unlink", arity: -2, flags: fWF, acl: aclKeyspace, first: 1, last: -1, step: 1,
		tips: tipsMultiShardSum, keys: []KeySpec{ks(1, -1, 1, "RM", "delete")},
		group: "generic", since: "4.0.0",
		complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
		summary:    "Asynchronously deletes one or more keys."},
	{name: "exists", arity: -2, flags: fRF, acl: aclKeyspace, first: 1, last: -1, step: 1,
		tips: tipsMultiShardSum, keys: []KeySpec{ks(1, -1, 1, "RO")},
		group: "generic", since: "1.0.0", complexity: "O(N) where N is the number of keys to check.",
		summary: "Determines whether one or more keys exist.",
		history: [][2]string{{"3.0.3", "Accepts multiple `key` arguments."}}},
	{name: "expire", arity: -3, flags: fWF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "update")},
		group: "generic", since: "1.0.0", complexity: o1, history: histExpire,
		summary: "Sets the expiration time of a key in seconds."},
	{name: "pexpire", arity: -3, flags: fWF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "update")},
		group: "generic", since: "2.6.0", complexity: o1, history: histExpire,
		summary: "Sets the expiration time of a key in milliseconds."},
	{name: "expireat", arity: -3, flags: fWF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "update")},
		group: "generic", since: "1.2.0", complexity: o1, history: histExpire,
		summary: "Sets the expiration time of a key to a Unix timestamp."},
	{name: "pexpireat", arity: -3, flags: fWF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "update")},
		group: "generic", since: "2.6.0", complexity: o1, history: histExpire,
		summary: "Sets the expiration time of a key to a Unix milliseconds timestamp."},
	{name: "ttl", arity: 2, flags: fRF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		tips: []string{nondet}, keys: []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "generic", since: "1.0.0", complexity: o1, history: histTTL,
		summary: "Returns the expiration time in seconds of a key."},
	{name: "pttl", arity: 2, flags: fRF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		tips: []string{nondet}, keys: []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "generic", since: "2.6.0", complexity: o1, history: histTTL,
		summary: "Returns the expiration time in milliseconds of a key."},
	{name: "persist", arity: 2, flags: fWF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "update")},
		group: "generic", since: "2.2.0", complexity: o1,
		summary: "Removes the expiration time of a key."},
	{name: "type", arity: 2, flags: fRF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO")},
		group: "generic", since: "1.0.0", complexity: o1,
		summary: "Determines the type of value stored at a key."},
	{name: "scan", arity: -2, flags: FlagReadOnly, acl: aclKeyspace,
		tips:  []string{nondet, "request_policy:special", "response_policy:special"},
		group: "generic", since: "2.8.0",
		complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
		summary:    "Iterates over the key names in the database.",
		history:    [][2]string{{"6.0.0", "Added the `TYPE` subcommand."}}},
	{name: "rename", arity: 3, flags: FlagWrite, acl: aclKeyspace, first: 1, last: 2, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "delete"), ks(2, single, 1, "OW", "update")},
		group: "generic", since: "1.0.0", complexity: o1,
		summary: "Renames a key and overwrites the destination."},
	{name: "renamenx", arity: 3, flags: fWF, acl: aclKeyspace, first: 1, last: 2, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RW", "access", "delete"), ks(2, single, 1, "OW", "insert")},
		group: "generic", since: "1.0.0", complexity: o1,
		summary: "Renames a key only when the target key name doesn't exist.",
		history: [][2]string{{"3.2.0", "The command no longer returns an error when source and destination names are the same."}}},
	{name: "copy", arity: -3, flags: FlagWrite | FlagDenyOOM, acl: aclKeyspace, first: 1, last: 2, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO", "access"), ks(2, single, 1, "OW", "update")},
		group: "generic", since: "6.2.0",
		complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
		summary:    "Copies the value of a key to a new key."},
	{name: "keys", arity: -2, flags: FlagReadOnly, acl: aclKeyspace | aclDangerous, // memgest: KEYS pattern [CLUSTER]
		tips:  []string{"request_policy:all_shards", nondetOrder},
		group: "generic", since: "1.0.0",
		complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
		summary:    "Returns all key names that match a pattern."},
	{name: "randomkey", arity: 1, flags: FlagReadOnly, acl: aclKeyspace, // and TOUCHES_ARBITRARY_KEYS, which COMMAND INFO hides
		tips:  []string{"request_policy:all_shards", "response_policy:special", nondet},
		group: "generic", since: "1.0.0", complexity: o1,
		summary: "Returns a random key name from the database."},
	{name: "touch", arity: -2, flags: fRF, acl: aclKeyspace, first: 1, last: -1, step: 1,
		tips: tipsMultiShardSum, keys: []KeySpec{ks(1, -1, 1, "RO")},
		group: "generic", since: "3.2.1", complexity: "O(N) where N is the number of keys that will be touched.",
		summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed."},
	{name: "expiretime", arity: 2, flags: fRF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "generic", since: "7.0.0", complexity: o1,
		summary: "Returns the expiration time of a key as a Unix timestamp."},
	{name: "pexpiretime", arity: 2, flags: fRF, acl: aclKeyspace, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "RO", "access")},
		group: "generic", since: "7.0.0", complexity: o1,
		summary: "Returns the expiration time of a key as a Unix milliseconds timestamp."},
	{name: "wait", arity: 3, acl: aclConnection,
		tips:  []string{"request_policy:all_shards", "response_policy:agg_min"},
		group: "generic", since: "3.0.0", complexity: o1,
		summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."},
	{name: "object", arity: -2, group: "generic", since: "2.2.3", complexity: depends,
		summary: "A container for object introspection commands.", subs: objectSubs},
}

// objectSubs are OBJECT's subcommands; key positions count from "OBJECT"
// at 0.
var objectSubs = []def{
	{name: "encoding", arity: 3, flags: FlagReadOnly, acl: aclKeyspace, first: 2, last: 2, step: 1,
		tips: []string{nondet}, keys: []KeySpec{ks(2, single, 1, "RO")},
		group: "generic", since: "2.2.3", complexity: o1,
		summary: "Returns the internal encoding of a Redis object."},
	{name: "freq", arity: 3, flags: FlagReadOnly, acl: aclKeyspace, first: 2, last: 2, step: 1,
		tips: []string{nondet}, keys: []KeySpec{ks(2, single, 1, "RO")},
		group: "generic", since: "4.0.0", complexity: o1,
		summary: "Returns the logarithmic access frequency counter of a Redis object."},
	{name: "help", arity: 2, flags: fLS, acl: aclKeyspace, group: "generic", since: "6.2.0",
		complexity: o1, summary: helpSummary},
	{name: "idletime", arity: 3, flags: FlagReadOnly, acl: aclKeyspace, first: 2, last: 2, step: 1,
		tips: []string{nondet}, keys: []KeySpec{ks(2, single, 1, "RO")},
		group: "generic", since: "2.2.3", complexity: o1,
		summary: "Returns the time since the last access to a Redis object."},
	{name: "refcount", arity: 3, flags: FlagReadOnly, acl: aclKeyspace, first: 2, last: 2, step: 1,
		tips: []string{nondet}, keys: []KeySpec{ks(2, single, 1, "RO")},
		group: "generic", since: "2.2.3", complexity: o1,
		summary: "Returns the reference count of a value of a key."},
}

// memorySubs are the MEMORY subcommands memgest has: USAGE and HELP (it
// has no allocator to report on).
var memorySubs = []def{
	{name: "help", arity: 2, flags: fLS, group: "server", since: "4.0.0", complexity: o1, summary: helpSummary},
	{name: "usage", arity: -3, flags: FlagReadOnly, first: 2, last: 2, step: 1,
		keys:  []KeySpec{ks(2, single, 1, "RO")},
		group: "server", since: "4.0.0", complexity: "O(N) where N is the number of samples.",
		summary: "Estimates the memory usage of a key."},
}

var serverDefs = []def{
	{name: "dbsize", arity: -1, flags: fRF, acl: aclKeyspace, // memgest: DBSIZE [CLUSTER]
		tips:  []string{"request_policy:all_shards", "response_policy:agg_sum"},
		group: "server", since: "1.0.0", complexity: o1,
		summary: "Returns the number of keys in the database."},
	{name: "debug", arity: -2, flags: fANLS, group: "server", since: "1.0.0", docFlags: []string{"syscmd"},
		complexity: depends, summary: "A container for debugging commands."},
	{name: "flushall", arity: -1, flags: FlagWrite, acl: aclKeyspace | aclDangerous,
		tips: tipsAllShardsOK, group: "server", since: "1.0.0", history: histFlush,
		complexity: "O(N) where N is the total number of keys in all databases",
		summary:    "Removes all keys from all databases."},
	{name: "flushdb", arity: -1, flags: FlagWrite, acl: aclKeyspace | aclDangerous,
		tips: tipsAllShardsOK, group: "server", since: "1.0.0", history: histFlush,
		complexity: "O(N) where N is the number of keys in the selected database",
		summary:    "Remove all keys from the current database."}, // sic: 7.2 says "Remove" here, "Removes" for FLUSHALL
	{name: "info", arity: -1, flags: fLS, acl: aclDangerous,
		tips:  []string{nondet, "request_policy:all_shards", "response_policy:special"},
		group: "server", since: "1.0.0", complexity: o1,
		summary: "Returns information and statistics about the server.",
		history: [][2]string{{"7.0.0", "Added support for taking multiple section arguments."}}},
	{name: "command", arity: -1, flags: fLS, acl: aclConnection, tips: []string{nondetOrder},
		group: "server", since: "2.8.13", complexity: "O(N) where N is the total number of Redis commands",
		summary: "Returns detailed information about all commands.", subs: commandSubs},
	{name: "config", arity: -2, group: "server", since: "2.0.0", complexity: depends,
		summary: "A container for server configuration commands.", subs: configSubs},
	{name: "memory", arity: -2, group: "server", since: "4.0.0", complexity: depends,
		summary: "A container for memory diagnostics commands.", subs: memorySubs},
	{name: "time", arity: 1, flags: fLSF, tips: []string{nondet},
		group: "server", since: "2.6.0", complexity: o1, summary: "Returns the server time."},
}

var commandSubs = []def{
	{name: "count", arity: 2, flags: fLS, acl: aclConnection, group: "server", since: "2.8.13",
		complexity: o1, summary: "Returns a count of commands."},
	{name: "docs", arity: -2, flags: fLS, acl: aclConnection, tips: []string{nondetOrder},
		group: "server", since: "7.0.0", complexity: "O(N) where N is the number of commands to look up",
		summary: "Returns documentary information about one, multiple or all commands."},
	{name: "getkeys", arity: -3, flags: fLS, acl: aclConnection, group: "server", since: "2.8.13",
		complexity: "O(N) where N is the number of arguments to the command",
		summary:    "Extracts the key names from an arbitrary command."},
	{name: "getkeysandflags", arity: -3, flags: fLS, acl: aclConnection, group: "server", since: "7.0.0",
		complexity: "O(N) where N is the number of arguments to the command",
		summary:    "Extracts the key names and access flags for an arbitrary command."},
	{name: "help", arity: 2, flags: fLS, acl: aclConnection, group: "server", since: "5.0.0",
		complexity: o1, summary: helpSummary},
	{name: "info", arity: -2, flags: fLS, acl: aclConnection, tips: []string{nondetOrder},
		group: "server", since: "2.8.13", complexity: "O(N) where N is the number of commands to look up",
		summary: "Returns information about one, multiple or all commands.",
		history: [][2]string{{"7.0.0", "Allowed to be called with no argument to get info on all commands."}}},
	{name: "list", arity: -2, flags: fLS, acl: aclConnection, tips: []string{nondetOrder},
		group: "server", since: "7.0.0", complexity: "O(N) where N is the total number of Redis commands",
		summary: "Returns a list of command names."},
}

var configSubs = []def{
	{name: "get", arity: -3, flags: fANLS, group: "server", since: "2.0.0",
		complexity: "O(N) when N is the number of configuration parameters provided",
		summary:    "Returns the effective values of configuration parameters.",
		history:    [][2]string{{"7.0.0", "Added the ability to pass multiple pattern parameters in one call"}}},
	{name: "help", arity: 2, flags: fLS, group: "server", since: "5.0.0", complexity: o1, summary: helpSummary},
	{name: "resetstat", arity: 2, flags: fANLS, tips: tipsAllNodesOK, group: "server", since: "2.0.0",
		complexity: o1, summary: "Resets the server's statistics."},
	{name: "rewrite", arity: 2, flags: fANLS, tips: tipsAllNodesOK, group: "server", since: "2.8.0",
		complexity: o1, summary: "Persists the effective configuration to file."},
	{name: "set", arity: -4, flags: fANLS, tips: tipsAllNodesOK, group: "server", since: "2.0.0",
		complexity: "O(N) when N is the number of configuration parameters provided",
		summary:    "Sets configuration parameters in-flight.",
		history:    [][2]string{{"7.0.0", "Added the ability to set multiple parameters in one call."}}},
}

var connectionDefs = []def{
	{name: "ping", arity: -1, flags: FlagFast, acl: aclConnection, tips: tipsAllShardsOK,
		group: "connection", since: "1.0.0", complexity: o1,
		summary: "Returns the server's liveliness response."},
	{name: "echo", arity: 2, flags: fLSF, acl: aclConnection,
		group: "connection", since: "1.0.0", complexity: o1, summary: "Returns the given string."},
	{name: "hello", arity: -1, flags: fConn, acl: aclConnection,
		group: "connection", since: "6.0.0", complexity: o1, summary: "Handshakes with the Redis server.",
		history: [][2]string{{"6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."}}},
	{name: "auth", arity: -2, flags: fConn, acl: aclConnection,
		group: "connection", since: "1.0.0", complexity: "O(N) where N is the number of passwords defined for the user",
		summary: "Authenticates the connection.",
		history: [][2]string{{"6.0.0", "Added ACL style (username and password)."}}},
	{name: "select", arity: 2, flags: fLSF, acl: aclConnection,
		group: "connection", since: "1.0.0", complexity: o1, summary: "Changes the selected database."},
	{name: "quit", arity: -1, flags: fConn, acl: aclConnection,
		group: "connection", since: "1.0.0", complexity: o1, summary: "Closes the connection.",
		deprecated: "7.2.0", replacedBy: "just closing the connection"},
	{name: "client", arity: -2, group: "connection", since: "2.4.0", complexity: depends,
		summary: "A container for client connection commands.", subs: clientSubs},
}

var clientSubs = []def{
	{name: "getname", arity: 2, flags: fNLS, acl: aclConnection, group: "connection", since: "2.6.9",
		complexity: o1, summary: "Returns the name of the connection."},
	{name: "help", arity: 2, flags: fLS, acl: aclConnection, group: "connection", since: "5.0.0",
		complexity: o1, summary: helpSummary},
	{name: "id", arity: 2, flags: fNLS, acl: aclConnection, group: "connection", since: "5.0.0",
		complexity: o1, summary: "Returns the unique client ID of the connection."},
	{name: "info", arity: 2, flags: fNLS, acl: aclConnection, tips: []string{nondet},
		group: "connection", since: "6.2.0", complexity: o1,
		summary: "Returns information about the connection."},
	{name: "kill", arity: -3, flags: fANLS, acl: aclConnection, group: "connection", since: "2.4.0",
		complexity: "O(N) where N is the number of client connections",
		summary:    "Terminates open connections.",
		history: [][2]string{
			{"2.8.12", "Added new filter format."},
			{"2.8.12", "`ID` option."},
			{"3.2.0", "Added `master` type in for `TYPE` option."},
			{"5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."},
			{"6.2.0", "`LADDR` option."},
		}},
	{name: "list", arity: -2, flags: fANLS, acl: aclConnection, tips: []string{nondet},
		group: "connection", since: "2.4.0", complexity: "O(N) where N is the number of client connections",
		summary: "Lists open connections.",
		history: [][2]string{
			{"2.8.12", "Added unique client `id` field."},
			{"5.0.0", "Added optional `TYPE` filter."},
			{"6.0.0", "Added `user` field."},
			{"6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."},
			{"7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."},
			{"7.0.3", "Added `ssub` field."},
		}},
	{name: "setinfo", arity: 4, flags: fNLS, acl: aclConnection, tips: tipsAllNodesOK,
		group: "connection", since: "7.2.0", complexity: o1,
		summary: "Sets information specific to the client or connection."},
	{name: "setname", arity: 3, flags: fNLS, acl: aclConnection, tips: tipsAllNodesOK, group: "connection", since: "2.6.9",
		complexity: o1, summary: "Sets the connection name."},
}

var clusterDefs = []def{
	{name: "cluster", arity: -2, group: "cluster", since: "3.0.0", complexity: depends,
		summary: "A container for Redis Cluster commands.", subs: clusterSubs},
	{name: "readonly", arity: 1, flags: fLSF, acl: aclConnection, group: "cluster", since: "3.0.0",
		complexity: o1, summary: "Enables read-only queries for a connection to a Redis Cluster replica node."},
	// "Reids" is Redis's own spelling in readwrite.json.
	{name: "readwrite", arity: 1, flags: fLSF, acl: aclConnection, group: "cluster", since: "3.0.0",
		complexity: o1, summary: "Enables read-write queries for a connection to a Reids Cluster replica node."},
}

var clusterSubs = []def{
	{name: "countkeysinslot", arity: 3, flags: FlagStale, group: "cluster", since: "3.0.0",
		complexity: o1, summary: "Returns the number of keys in a hash slot."},
	{name: "getkeysinslot", arity: 4, flags: FlagStale, tips: []string{nondet}, group: "cluster",
		since: "3.0.0", complexity: "O(N) where N is the number of requested keys",
		summary: "Returns the key names in a hash slot."},
	{name: "help", arity: 2, flags: fLS, group: "cluster", since: "5.0.0", complexity: o1, summary: helpSummary},
	{name: "info", arity: 2, flags: FlagStale, tips: []string{nondet}, group: "cluster", since: "3.0.0",
		complexity: o1, summary: "Returns information about the state of a node."},
	{name: "keyslot", arity: 3, flags: FlagStale, group: "cluster", since: "3.0.0",
		complexity: "O(N) where N is the number of bytes in the key",
		summary:    "Returns the hash slot for a key."},
	{name: "myid", arity: 2, flags: FlagStale, group: "cluster", since: "3.0.0", complexity: o1,
		summary: "Returns the ID of a node."},
	{name: "myshardid", arity: 2, flags: FlagStale, tips: []string{nondet}, group: "cluster", since: "7.2.0",
		complexity: o1, summary: "Returns the shard ID of a node."},
	{name: "nodes", arity: 2, flags: FlagStale, tips: []string{nondet}, group: "cluster", since: "3.0.0",
		complexity: "O(N) where N is the total number of Cluster nodes",
		summary:    "Returns the cluster configuration for a node."},
	{name: "shards", arity: 2, flags: fLS, tips: []string{nondet}, group: "cluster", since: "7.0.0",
		complexity: "O(N) where N is the total number of cluster nodes",
		summary:    "Returns the mapping of cluster slots to shards."},
	{name: "slots", arity: 2, flags: fLS, tips: []string{nondet}, group: "cluster", since: "3.0.0",
		complexity: "O(N) where N is the total number of Cluster nodes",
		summary:    "Returns the mapping of cluster slots to nodes.",
		deprecated: "7.0.0", replacedBy: "`CLUSTER SHARDS`",
		history: [][2]string{{"4.0.0", "Added node IDs."}, {"7.0.0", "Added additional networking metadata field."}}},
}

// memgestSince is the memgest release that introduced SCHEME.
const memgestSince = "0.1.0"

// schemeSubs are SCHEME's subcommands. Key positions count from "SCHEME"
// at 0, so SCHEME OF key has its key at 2.
var schemeSubs = []def{
	{name: "create", arity: 4, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Creates a storage scheme under an alias from a scheme spec."},
	{name: "default", arity: -2, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Returns the default storage scheme for new keys, or sets it to the named scheme."},
	{name: "drop", arity: 3, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Removes a storage scheme that no key uses."},
	{name: "help", arity: 2, flags: fLS, group: "memgest", since: memgestSince, complexity: o1,
		summary: helpSummary},
	{name: "info", arity: 3, flags: FlagReadOnly | fLS, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Returns the spec, tolerance and overhead of a storage scheme."},
	{name: "list", arity: 2, flags: FlagReadOnly | fLS, group: "memgest", since: memgestSince,
		complexity: "O(N) where N is the number of schemes", summary: "Lists the storage schemes."},
	{name: "move", arity: 4, flags: FlagWrite | FlagDenyOOM, first: 2, last: 2, step: 1,
		keys:  []KeySpec{ks(2, single, 1, "RW", "update")},
		group: "memgest", since: memgestSince, complexity: "O(N) where N is the size of the value",
		summary: "Re-encodes a key's value under another storage scheme."},
	{name: "of", arity: 3, flags: fRF, first: 2, last: 2, step: 1,
		keys:  []KeySpec{ks(2, single, 1, "RO")},
		group: "memgest", since: memgestSince, complexity: o1,
		summary: "Returns the storage scheme of a key and how many failures it tolerates now."},
	{name: "policy", arity: -2, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Returns the scheme policy that picks the scheme of keys written without one, or sets or removes it."},
	{name: "verify", arity: 3, flags: FlagReadOnly, first: 2, last: 2, step: 1,
		keys:  []KeySpec{ks(2, single, 1, "RO")},
		group: "memgest", since: memgestSince, complexity: "O(N) where N is the size of the value",
		summary: "Checks that every redundancy piece of a key agrees with its committed version."},
}

// membershipDefs are memgest's commands that grow and shrink the cluster
// (decision 0016).
var membershipDefs = []def{
	{name: "rebalance", arity: -1, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Starts moving slots so that every data node holds its share, changes the running rebalance's rate or parallelism, or stops it."},
	{name: "node.promote", arity: 2, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Makes a spare node a data node, which a rebalance gives slots to."},
	{name: "node.drain", arity: -2, flags: FlagWrite | FlagNoScript, group: "memgest", since: memgestSince,
		complexity: o1, summary: "Moves every slot and piece off a node and then removes it from the cluster, or with CANCEL stops doing so."},
}

var schemeDef = def{name: "scheme", arity: -2, group: "memgest", since: memgestSince,
	complexity: depends, summary: "A container for memgest storage scheme commands.", subs: schemeSubs}

// dotted derives the "scheme.of" style top-level command from a SCHEME
// subcommand: one argument shorter, keys one position earlier.
func dotted(sub def) def {
	d := sub
	d.name = "scheme." + sub.name
	if sub.arity < 0 {
		d.arity = sub.arity + 1 // a shorter minimum
	} else {
		d.arity = sub.arity - 1
	}
	if d.first > 0 {
		d.first, d.last = sub.first-1, sub.last-1
	}
	d.keys = nil
	for _, k := range sub.keys {
		k.BeginIndex--
		d.keys = append(d.keys, k)
	}
	return d
}

var (
	commandIndex    = map[string]*CommandSpec{}
	subcommandIndex = map[string]*CommandSpec{}
	commandList     []*CommandSpec
	allSpecs        []*CommandSpec // every command and subcommand, by Index
)

func init() {
	var defs []def
	for _, group := range [][]def{stringDefs, hashDefs, genericDefs, serverDefs, connectionDefs, clusterDefs, pubsubDefs, transactionDefs} {
		defs = append(defs, group...)
	}
	defs = append(defs, membershipDefs...)
	defs = append(defs, schemeDef)
	for _, sub := range schemeSubs {
		if sub.name != "help" {
			defs = append(defs, dotted(sub))
		}
	}
	for _, d := range defs {
		spec := build(d, nil)
		commandIndex[spec.Name] = spec
		commandList = append(commandList, spec)
	}
	slices.SortFunc(commandList, func(a, b *CommandSpec) int { return strings.Compare(a.Name, b.Name) })
}

// build turns a row into a spec, recursing into subcommands.
func build(d def, parent *CommandSpec) *CommandSpec {
	name := d.name
	if parent != nil {
		name = parent.Name + "|" + d.name
	}
	spec := &CommandSpec{
		Name: name, Arity: d.arity, FirstKey: d.first, LastKey: d.last, Step: d.step,
		Flags: bitNames(uint32(d.flags), flagNames), flags: d.flags,
		ACLCategories: withAt(bitNames(uint32(impliedACL(d.flags, d.acl)), aclNames)),
		Tips:          d.tips, KeySpecs: d.keys, Parent: parent,
		Group: d.group, Summary: d.summary, Since: d.since, Complexity: d.complexity,
		History: d.history, DeprecatedSince: d.deprecated, ReplacedBy: d.replacedBy,
		index: len(allSpecs),
	}
	allSpecs = append(allSpecs, spec)
	spec.DocFlags = d.docFlags
	if d.deprecated != "" {
		spec.DocFlags = append(slices.Clone(d.docFlags), "deprecated")
	}
	for _, s := range d.subs {
		sub := build(s, spec)
		spec.Subcommands = append(spec.Subcommands, sub)
		if spec.subs == nil {
			spec.subs = map[string]*CommandSpec{}
		}
		spec.subs[s.name] = sub
		subcommandIndex[sub.Name] = sub
	}
	slices.SortFunc(spec.Subcommands, func(a, b *CommandSpec) int { return strings.Compare(a.Name, b.Name) })
	return spec
}

func bitNames(bits uint32, names []string) []string {
	out := []string{}
	for i, n := range names {
		if bits&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

func withAt(names []string) []string {
	for i, n := range names {
		names[i] = "@" + n
	}
	return names
}
