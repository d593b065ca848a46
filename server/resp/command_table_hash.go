package resp

// hashDefs are Redis 7.2's hash commands (src/commands/h*.json).
var hashDefs = []def{
	hashRow("hset", -4, FlagWrite|FlagDenyOOM|FlagFast, "RW", "update", "2.0.0",
		"O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
		"Creates or modifies the value of a field in a hash.").
		withHistory([2]string{"4.0.0", "Accepts multiple `field` and `value` arguments."}),
	hashRow("hmset", -4, FlagWrite|FlagDenyOOM|FlagFast, "RW", "update", "2.0.0",
		"O(N) where N is the number of fields being set.", "Sets the values of multiple fields.").
		deprecatedBy("4.0.0", "`HSET` with multiple field-value pairs"),
	hashRow("hsetnx", 4, FlagWrite|FlagDenyOOM|FlagFast, "RW", "insert", "2.0.0", o1,
		"Sets the value of a field in a hash only when the field doesn't exist."),
	hashRow("hget", 3, fRF, "RO", "access", "2.0.0", o1, "Returns the value of a field in a hash."),
	hashRow("hmget", -3, fRF, "RO", "access", "2.0.0",
		"O(N) where N is the number of fields being requested.", "Returns the values of all fields in a hash."),
	hashRow("hgetall", 2, FlagReadOnly, "RO", "access", "2.0.0",
		"O(N) where N is the size of the hash.", "Returns all fields and values in a hash.").withTips(nondetOrder),
	hashRow("hkeys", 2, FlagReadOnly, "RO", "access", "2.0.0",
		"O(N) where N is the size of the hash.", "Returns all fields in a hash.").withTips(nondetOrder),
	hashRow("hvals", 2, FlagReadOnly, "RO", "access", "2.0.0",
		"O(N) where N is the size of the hash.", "Returns all values in a hash.").withTips(nondetOrder),
	hashRow("hdel", -3, fWF, "RW", "delete", "2.0.0", "O(N) where N is the number of fields to be removed.",
		"Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.").
		withHistory([2]string{"2.4.0", "Accepts multiple `field` arguments."}),
	hashRow("hexists", 3, fRF, "RO", "", "2.0.0", o1, "Determines whether a field exists in a hash."),
	hashRow("hlen", 2, fRF, "RO", "", "2.0.0", o1, "Returns the number of fields in a hash."),
	hashRow("hstrlen", 3, fRF, "RO", "", "3.2.0", o1, "Returns the length of the value of a field."),
	hashRow("hincrby", 4, fWDF, "RW", "access", "2.0.0", o1,
		"Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.").
		withKeyFlags("RW", "access", "update"),
	hashRow("hincrbyfloat", 4, fWDF, "RW", "access", "2.6.0", o1,
		"Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.").
		withKeyFlags("RW", "access", "update"),
	hashRow("hscan", -3, FlagReadOnly, "RO", "access", "2.8.0",
		"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
		"Iterates over fields and values of a hash.").withTips(nondet),
	hashRow("hrandfield", -2, FlagReadOnly, "RO", "access", "6.2.0",
		"O(N) where N is the number of fields returned", "Returns one or more random fields from a hash.").withTips(nondet),
}

// hashRow is a hash command's row: one key at position 1 with the key
// spec flags rw and (unless "") the access kind.
func hashRow(name string, arity int, flags Flag, rw, access, since, complexity, summary string) def {
	keyFlags := []string{rw}
	if access != "" {
		keyFlags = append(keyFlags, access)
	}
	return def{name: name, arity: arity, flags: flags, acl: aclHash, first: 1, last: 1, step: 1,
		keys: []KeySpec{ks(1, single, 1, keyFlags...)}, group: "hash", since: since,
		complexity: complexity, summary: summary}
}

func (d def) withHistory(h ...[2]string) def { d.history = h; return d }

func (d def) withTips(tips ...string) def { d.tips = tips; return d }

func (d def) withKeyFlags(flags ...string) def {
	d.keys = []KeySpec{ks(1, single, 1, flags...)}
	return d
}

func (d def) deprecatedBy(since, replacedBy string) def {
	d.deprecated, d.replacedBy = since, replacedBy
	return d
}
