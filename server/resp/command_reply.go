package resp

import (
	"slices"
	"strings"
)

// CommandInfo is spec's entry in COMMAND and COMMAND INFO, the ten-field
// array of Redis 7: name, arity, flags, first key, last key, step, ACL
// categories, tips, key specifications and subcommands. A nil spec gives
// [Nil], as COMMAND INFO answers for an unknown name.
func CommandInfo(spec *CommandSpec) Reply {
	if spec == nil {
		return Nil()
	}
	subs := Set()
	if len(spec.Subcommands) > 0 {
		items := make([]Reply, len(spec.Subcommands))
		for i, s := range spec.Subcommands {
			items[i] = CommandInfo(s)
		}
		subs = Array(items...)
	}
	return Array(
		BulkString(spec.Name),
		Int(int64(spec.Arity)),
		simpleSet(spec.Flags),
		Int(int64(spec.FirstKey)),
		Int(int64(spec.LastKey)),
		Int(int64(spec.Step)),
		simpleSet(spec.ACLCategories),
		bulkSet(spec.Tips),
		keySpecsReply(spec.KeySpecs),
		subs,
	)
}

func simpleSet(ss []string) Reply {
	items := make([]Reply, len(ss))
	for i, s := range ss {
		items[i] = Simple(s)
	}
	return Set(items...)
}

func bulkSet(ss []string) Reply {
	items := make([]Reply, len(ss))
	for i, s := range ss {
		items[i] = BulkString(s)
	}
	return Set(items...)
}

func keySpecsReply(specs []KeySpec) Reply {
	items := make([]Reply, len(specs))
	for i, k := range specs {
		var kv []Reply
		if k.Notes != "" {
			kv = append(kv, BulkString("notes"), BulkString(k.Notes))
		}
		kv = append(kv,
			BulkString("flags"), simpleSet(k.Flags),
			BulkString("begin_search"), Map(
				BulkString("type"), BulkString("index"),
				BulkString("spec"), Map(BulkString("index"), Int(int64(k.BeginIndex)))),
			BulkString("find_keys"), Map(
				BulkString("type"), BulkString("range"),
				BulkString("spec"), Map(
					BulkString("lastkey"), Int(int64(k.LastKey)),
					BulkString("keystep"), Int(int64(k.KeyStep)),
					BulkString("limit"), Int(int64(k.Limit)))))
		items[i] = Map(kv...)
	}
	return Set(items...)
}

// CommandDocs is COMMAND DOCS' map from each spec's name to its
// documentation: summary, since, group, complexity, and when present
// doc_flags, deprecated_since, replaced_by, history and subcommands.
// Argument descriptions are not provided.
func CommandDocs(specs []*CommandSpec) Reply {
	kv := make([]Reply, 0, 2*len(specs))
	for _, s := range specs {
		kv = append(kv, BulkString(s.Name), commandDoc(s))
	}
	return Map(kv...)
}

func commandDoc(s *CommandSpec) Reply {
	kv := []Reply{
		BulkString("summary"), BulkString(s.Summary),
		BulkString("since"), BulkString(s.Since),
		BulkString("group"), BulkString(s.Group),
	}
	if s.Complexity != "" {
		kv = append(kv, BulkString("complexity"), BulkString(s.Complexity))
	}
	if len(s.DocFlags) > 0 {
		kv = append(kv, BulkString("doc_flags"), simpleSet(s.DocFlags))
	}
	if s.DeprecatedSince != "" {
		kv = append(kv, BulkString("deprecated_since"), BulkString(s.DeprecatedSince))
	}
	if s.ReplacedBy != "" {
		kv = append(kv, BulkString("replaced_by"), BulkString(s.ReplacedBy))
	}
	if len(s.History) > 0 {
		h := make([]Reply, len(s.History))
		for i, e := range s.History {
			h[i] = BulkStrings(e[0], e[1])
		}
		kv = append(kv, BulkString("history"), Set(h...))
	}
	if len(s.Subcommands) > 0 {
		kv = append(kv, BulkString("subcommands"), CommandDocs(s.Subcommands))
	}
	return Map(kv...)
}

// CommandCommand answers COMMAND and its subcommands COUNT, INFO, DOCS,
// LIST [FILTERBY MODULE|ACLCAT|PATTERN x], GETKEYS, GETKEYSANDFLAGS and
// HELP as Redis 7 does; args is the whole vector starting with "COMMAND".
// Commands are listed sorted by name, where Redis lists them in hash order.
func CommandCommand(args [][]byte) Reply {
	if len(args) < 2 {
		return allInfo()
	}
	sub := args[1]
	switch {
	case equalFold(sub, "count"):
		return Int(int64(len(commandList)))
	case equalFold(sub, "info"):
		if len(args) == 2 {
			return allInfo()
		}
		items := make([]Reply, 0, len(args)-2)
		for _, name := range args[2:] {
			spec, _ := lookupFullName(string(name))
			items = append(items, CommandInfo(spec))
		}
		return Array(items...)
	case equalFold(sub, "docs"):
		return commandDocsFor(args[2:])
	case equalFold(sub, "list"):
		return listCommands(args[2:])
	case equalFold(sub, "getkeys"):
		return getKeys(args[2:], false)
	case equalFold(sub, "getkeysandflags"):
		return getKeys(args[2:], true)
	case equalFold(sub, "help"):
		return Help("COMMAND", commandHelp...)
	}
	return ErrUnknownSubcommand("command", string(sub))
}

var commandHelp = []string{
	"(no subcommand)",
	"    Return details about all Redis commands.",
	"COUNT",
	"    Return the total number of commands in this Redis server.",
	"LIST",
	"    Return a list of all commands in this Redis server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
}

func allInfo() Reply {
	items := make([]Reply, len(commandList))
	for i, s := range commandList {
		items[i] = CommandInfo(s)
	}
	return Array(items...)
}

// commandDocsFor documents the named commands, skipping unknown names, or
// every command when names is empty.
func commandDocsFor(names [][]byte) Reply {
	if len(names) == 0 {
		return CommandDocs(commandList)
	}
	var specs []*CommandSpec
	for _, n := range names {
		if s, ok := lookupFullName(string(n)); ok {
			specs = append(specs, s)
		}
	}
	return CommandDocs(specs)
}

// listCommands answers COMMAND LIST: every full name, subcommands after
// their container, optionally filtered by one trailing FILTERBY clause.
func listCommands(opts [][]byte) Reply {
	keep := func(*CommandSpec) bool { return true }
	switch {
	case len(opts) == 0:
	case len(opts) == 3 && equalFold(opts[0], "filterby"):
		var ok bool
		if keep, ok = listFilter(opts[1], opts[2]); !ok {
			return ErrSyntax
		}
	default:
		return ErrSyntax
	}
	var names []Reply
	var walk func([]*CommandSpec)
	walk = func(specs []*CommandSpec) {
		for _, s := range specs {
			if keep(s) {
				names = append(names, BulkString(s.Name))
			}
			walk(s.Subcommands)
		}
	}
	walk(commandList)
	return Array(names...)
}

// listFilter builds the FILTERBY predicate; memgest has no modules, so a
// MODULE filter matches nothing, like an unknown module in Redis.
func listFilter(kind, arg []byte) (func(*CommandSpec) bool, bool) {
	switch {
	case equalFold(kind, "module"):
		return func(*CommandSpec) bool { return false }, true
	case equalFold(kind, "aclcat"):
		cat := "@" + strings.ToLower(string(arg))
		return func(s *CommandSpec) bool { return slices.Contains(s.ACLCategories, cat) }, true
	case equalFold(kind, "pattern"):
		return func(s *CommandSpec) bool { return GlobMatch(arg, []byte(s.Name), true) }, true
	}
	return nil, false
}

// getKeys answers COMMAND GETKEYS and GETKEYSANDFLAGS for the command
// vector argv.
func getKeys(argv [][]byte, withFlags bool) Reply {
	spec := resolveQuiet(argv)
	switch {
	case spec == nil:
		return Err("ERR Invalid command specified")
	case len(spec.KeySpecs) == 0:
		return Err("ERR The command has no key arguments")
	case !CheckArity(spec, len(argv)):
		return Err("ERR Invalid number of arguments specified for command")
	}
	keys := spec.Keys(argv)
	if len(keys) == 0 {
		if spec.Has(FlagNoMandatoryKeys) {
			return Array()
		}
		return Err("ERR Invalid arguments specified for command")
	}
	items := make([]Reply, len(keys))
	for i, k := range keys {
		items[i] = Bulk(k)
		if withFlags {
			ks := spec.KeySpecs[0]
			if len(spec.KeySpecs) > 1 { // single keys in a row (RENAME, COPY)
				ks = spec.KeySpecs[min(i, len(spec.KeySpecs)-1)]
			}
			items[i] = Array(items[i], simpleSet(ks.Flags))
		}
	}
	return Array(items...)
}

// resolveQuiet finds the command or subcommand argv invokes, or nil.
func resolveQuiet(argv [][]byte) *CommandSpec {
	if len(argv) == 0 {
		return nil
	}
	spec, ok := Lookup(argv[0])
	if !ok {
		return nil
	}
	if len(spec.Subcommands) > 0 && len(argv) >= 2 {
		spec, _ = spec.Subcommand(argv[1])
	}
	return spec
}

// SchemeHelp is the reply to SCHEME HELP.
func SchemeHelp() Reply {
	return Help("SCHEME",
		"CREATE <alias> <spec>",
		"    Create a storage scheme named <alias> from <spec>, such as rep:3 or split:4+2.",
		"LIST",
		"    List the storage schemes.",
		"INFO <alias>",
		"    Show the spec, tolerance and overhead of a scheme.",
		"DROP <alias>",
		"    Remove a scheme that no key uses.",
		"DEFAULT [<alias>]",
		"    Show the default scheme for new keys, or set it.",
		"OF <key>",
		"    Show the scheme a key is stored under and the failures it tolerates now.",
		"MOVE <key> <alias>",
		"    Re-encode a key under another scheme.",
		"POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>]",
		"    Show, set or remove the policy that picks the scheme of keys written without one.",
	)
}
