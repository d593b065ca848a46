package resp

import (
	"strconv"
	"strings"
)

// Error replies with Redis 7's exact wording.
var (
	ErrSyntax       = Err("ERR syntax error")
	ErrWrongType    = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
	ErrNotInteger   = Err("ERR value is not an integer or out of range")
	ErrOverflow     = Err("ERR increment or decrement would overflow")
	ErrDecrOverflow = Err("ERR decrement would overflow") // DECRBY key -9223372036854775808
	ErrStringLength = Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	ErrOOM          = Err("OOM command not allowed when used memory > 'maxmemory'.")
	ErrNoAuth       = Err("NOAUTH Authentication required.")
	ErrWrongPass    = Err("WRONGPASS invalid username-password pair or user is disabled.")
	// ErrAuthNoPassword answers the one-argument AUTH when the default user
	// has no password.
	ErrAuthNoPassword = Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	// ErrHelloNoAuth answers HELLO from an unauthenticated connection that
	// did not pass AUTH.
	ErrHelloNoAuth   = Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	ErrNoProto       = Err("NOPROTO unsupported protocol version")
	ErrProtoVersion  = Err("ERR Protocol version is not an integer or out of range")
	ErrDBIndex       = Err("ERR DB index is out of range")
	ErrSelectCluster = Err("ERR SELECT is not allowed in cluster mode")
	ErrInvalidCursor = Err("ERR invalid cursor")
	ErrClientName    = Err("ERR Client names cannot contain spaces, newlines or special characters.")
	ErrReadOnly      = Err("READONLY You can't write against a read only replica.")
	ErrClusterDown   = Err("CLUSTERDOWN The cluster is down")
)

// ErrInvalidExpire is Redis's "invalid expire time in 'set' command" for
// the command named cmd (its lower-case full name).
func ErrInvalidExpire(cmd string) Reply {
	return Err("ERR invalid expire time in '" + strings.ToLower(cmd) + "' command")
}

// ErrWrongArity is "ERR wrong number of arguments for 'get' command". Redis
// 7 prints the command's lower-case full name, "config|get" for a
// subcommand, whatever case the client used.
func ErrWrongArity(name string) Reply {
	return Err("ERR wrong number of arguments for '" + strings.ToLower(name) + "' command")
}

// ErrUnknownCommand is Redis 7's reply to an unknown command, such as
// "ERR unknown command 'foo', with args beginning with: 'a' 'b' ". Like
// Redis it shows at most 128 bytes of the name, quotes arguments until 128
// bytes of them are shown, stops each string at a NUL byte and replaces CR
// and LF with spaces.
func ErrUnknownCommand(name string, args [][]byte) Reply {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(cString(name, 128))
	b.WriteString("', with args beginning with: ")
	shown := 0
	for _, a := range args {
		if shown >= 128 {
			break
		}
		s := cString(string(a), 128-shown)
		b.WriteString("'" + s + "' ")
		shown += len(s) + 3
	}
	return Err(b.String())
}

// ErrUnknownSubcommand is "ERR unknown subcommand 'foo'. Try CLIENT HELP.".
func ErrUnknownSubcommand(command, sub string) Reply {
	return Err("ERR unknown subcommand '" + cString(sub, 128) + "'. Try " +
		strings.ToUpper(command) + " HELP.")
}

// ErrUnsupportedOption is EXPIRE's "ERR Unsupported option foo".
func ErrUnsupportedOption(opt []byte) Reply {
	return Err("ERR Unsupported option " + cString(string(opt), len(opt)))
}

// Moved is the cluster redirection "MOVED <slot> <host:port>".
func Moved(slot int, addr string) Reply {
	return Err("MOVED " + strconv.Itoa(slot) + " " + addr)
}

// Ask is the cluster redirection "ASK <slot> <host:port>".
func Ask(slot int, addr string) Reply {
	return Err("ASK " + strconv.Itoa(slot) + " " + addr)
}

// cString is what C's "%.*s" prints of s: at most max bytes, stopping at
// the first NUL.
func cString(s string, max int) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// Help is the reply Redis gives to "<COMMAND> HELP": a header naming the
// command in upper case, the given lines, and the HELP entry, all as
// simple strings.
func Help(command string, lines ...string) Reply {
	items := make([]Reply, 0, len(lines)+3)
	items = append(items, Simple(strings.ToUpper(command)+
		" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"))
	for _, l := range lines {
		items = append(items, Simple(l))
	}
	items = append(items, Simple("HELP"), Simple("    Print this help."))
	return Array(items...)
}

// equalFold reports whether b equals the lower-case ASCII word w, ignoring
// the case of b.
func equalFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i, c := range b {
		if lower(c) != w[i] {
			return false
		}
	}
	return true
}

// lower is ASCII tolower, which is all C's tolower does in Redis's locale.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
