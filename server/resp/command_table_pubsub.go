package resp

// Pub/Sub rows of the table (Redis 7.2's src/commands/*.json), and RESET,
// the connection command that also leaves the subscribed state. The shard
// channel commands carry their channels as not_key key specs: they hash to
// slots like keys and route as keys do, but name no data.

// Flag sets of the pub/sub rows.
const (
	fSub = FlagPubSub | FlagNoScript | FlagLoading | FlagStale
	// PUBLISH and SPUBLISH are may_replicate in src/commands, a flag
	// COMMAND INFO never shows (addReplyFlagsForCommand hides it).
	fPub = FlagPubSub | FlagLoading | FlagStale | FlagFast
	fPS  = FlagPubSub | FlagLoading | FlagStale
)

var pubsubDefs = []def{
	{name: "subscribe", arity: -2, flags: fSub, group: "pubsub", since: "2.0.0",
		complexity: "O(N) where N is the number of channels to subscribe to.",
		summary:    "Listens for messages published to channels."},
	{name: "unsubscribe", arity: -1, flags: fSub, group: "pubsub", since: "2.0.0",
		complexity: "O(N) where N is the number of channels to unsubscribe.",
		summary:    "Stops listening to messages posted to channels."},
	{name: "psubscribe", arity: -2, flags: fSub, group: "pubsub", since: "2.0.0",
		complexity: "O(N) where N is the number of patterns to subscribe to.",
		summary:    "Listens for messages published to channels that match one or more patterns."},
	{name: "punsubscribe", arity: -1, flags: fSub, group: "pubsub", since: "2.0.0",
		complexity: "O(N) where N is the number of patterns to unsubscribe.",
		summary:    "Stops listening to messages published to channels that match one or more patterns."},
	{name: "publish", arity: 3, flags: fPub, group: "pubsub", since: "2.0.0",
		complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
		summary:    "Posts a message to a channel."},
	{name: "spublish", arity: 3, flags: fPub, first: 1, last: 1, step: 1,
		keys:  []KeySpec{ks(1, single, 1, "not_key")},
		group: "pubsub", since: "7.0.0",
		complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
		summary:    "Post a message to a shard channel"},
	{name: "ssubscribe", arity: -2, flags: fSub, first: 1, last: -1, step: 1,
		keys:  []KeySpec{ks(1, -1, 1, "not_key")},
		group: "pubsub", since: "7.0.0",
		complexity: "O(N) where N is the number of shard channels to subscribe to.",
		summary:    "Listens for messages published to shard channels."},
	{name: "sunsubscribe", arity: -1, flags: fSub, first: 1, last: -1, step: 1,
		keys:  []KeySpec{ks(1, -1, 1, "not_key")},
		group: "pubsub", since: "7.0.0",
		complexity: "O(N) where N is the number of shard channels to unsubscribe.",
		summary:    "Stops listening to messages posted to shard channels."},
	{name: "pubsub", arity: -2, group: "pubsub", since: "2.8.0", complexity: depends,
		summary: "A container for Pub/Sub commands.", subs: pubsubSubs},
	{name: "reset", arity: 1, flags: fConn, acl: aclConnection, group: "connection", since: "6.2.0",
		complexity: o1, summary: "Resets the connection."},
}

var pubsubSubs = []def{
	{name: "channels", arity: -2, flags: fPS, group: "pubsub", since: "2.8.0",
		complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
		summary:    "Returns the active channels."},
	{name: "help", arity: 2, flags: fLS, group: "pubsub", since: "6.2.0", complexity: o1, summary: helpSummary},
	{name: "numpat", arity: 2, flags: fPS, group: "pubsub", since: "2.8.0", complexity: o1,
		summary: "Returns a count of unique pattern subscriptions."},
	{name: "numsub", arity: -2, flags: fPS, group: "pubsub", since: "2.8.0",
		complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
		summary:    "Returns a count of subscribers to channels."},
	{name: "shardchannels", arity: -2, flags: fPS, group: "pubsub", since: "7.0.0",
		complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
		summary:    "Returns the active shard channels."},
	{name: "shardnumsub", arity: -2, flags: fPS, group: "pubsub", since: "7.0.0",
		complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
		summary:    "Returns the count of subscribers of shard channels."},
}
