package resp

// transactionDefs are Redis 7.2's transactions group (src/commands/
// multi.json, exec.json, discard.json, watch.json, unwatch.json).
var transactionDefs = []def{
	{name: "multi", arity: 1, flags: fTx, acl: aclTransaction,
		group: "transactions", since: "1.2.0", complexity: o1,
		summary: "Starts a transaction."},
	{name: "exec", arity: 1, flags: FlagNoScript | FlagLoading | FlagStale | FlagSkipSlowlog, acl: aclTransaction,
		group: "transactions", since: "1.2.0", complexity: "Depends on commands in the transaction",
		summary: "Executes all commands in a transaction."},
	{name: "discard", arity: 1, flags: fTx, acl: aclTransaction,
		group: "transactions", since: "2.0.0", complexity: "O(N), when N is the number of queued commands",
		summary: "Discards a transaction."},
	{name: "watch", arity: -2, flags: fTx, acl: aclTransaction, first: 1, last: -1, step: 1,
		keys:  []KeySpec{ks(1, -1, 1, "RO")},
		group: "transactions", since: "2.2.0", complexity: "O(1) for every key.",
		summary: "Monitors changes to keys to determine the execution of a transaction."},
	{name: "unwatch", arity: 1, flags: fTx, acl: aclTransaction,
		group: "transactions", since: "2.2.0", complexity: o1,
		summary: "Forgets about watched keys of a transaction."},
}

// fTx are the flags of MULTI, DISCARD, WATCH and UNWATCH.
const fTx = FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy
