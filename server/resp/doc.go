// Package resp is memgest's protocol-level library for the Redis client
// protocol: reply values rendered to RESP2 or RESP3, a reply parser for
// relaying and tests, the command table that COMMAND, routing and arity
// checks read, argument parsers that fail with Redis 7's exact error
// replies, Redis glob matching and INFO rendering.
//
// It does no I/O and keeps no state beyond a [RequestParser]'s place in a
// request: the network side (server/commands/clientio.go) hands it the bytes it
// read, gets argument vectors back, and writes the bytes replies render to.
//
// # Requests
//
// [ParseRequest] parses one client request in place: multibulk arguments
// are slices of the caller's buffer and inline ones are unescaped over
// their line, so a pipeline costs no copy per request. It checks
// [RequestLimits] as each header arrives. A [RequestParser] does the same
// for a stream that arrives in pieces, resuming a request where the last
// piece ended, so that parsing costs time linear in the bytes however
// they are cut. Hand-written: redcon's reader copies every request, and no
// library checks declared lengths before the payload arrives.
//
// # Replies
//
// A [Reply] is a small immutable tree built with constructors such as [OK],
// [Bulk], [Array] and [Map]. [Reply.AppendTo] renders it for the protocol
// version the connection negotiated with HELLO: RESP3 types degrade the way
// Redis degrades them for RESP2 clients (a map becomes a flat array, a
// double a bulk string, a boolean an integer, null a null bulk string).
// [Parse] reads one RESP2 or RESP3 reply back.
//
// # Commands
//
// The table holds every command memgest serves with the arity, flags,
// legacy key range, ACL categories, tips, key specifications and
// documentation Redis 7.2 reports in COMMAND INFO and COMMAND DOCS.
// [Resolve] performs the checks Redis makes before running a command
// (unknown command, unknown subcommand, arity) and [CommandSpec.Keys]
// extracts key arguments for routing.
//
// memgest's own SCHEME command is a container like CLIENT or CONFIG, so
// "SCHEME OF key" is canonical and COMMAND INFO scheme lists its
// subcommands. The dotted spellings (SCHEME.OF key, ...) are accepted as
// separate top-level commands, in the style of module commands, for clients
// that cannot send container commands; they share the subcommands' flags
// and documentation with their own arity and key positions.
package resp
