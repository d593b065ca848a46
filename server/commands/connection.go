package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/server/resp"
)

// Connection commands: they act on the session, never on data.
func init() {
	register("ping", &command{run: cmdPing})
	register("echo", &command{run: cmdEcho})
	register("hello", &command{run: cmdHello, noAuth: true})
	register("auth", &command{run: cmdAuth, noAuth: true})
	register("quit", &command{run: cmdOK, noAuth: true, tx: true})
	register("select", &command{run: cmdSelect})
	register("client", &command{run: cmdClient})
}

// cmdPing answers PONG or its one argument. The table's arity (-1) is
// Redis's; like Redis's pingCommand it refuses more than one argument.
func cmdPing(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args) <= 2 && cs.subscribedRESP2() { // Redis's reply in the subscribed state
		msg := resp.BulkString("")
		if len(args) == 2 {
			msg = resp.Bulk(args[1])
		}
		return resp.Array(resp.BulkString("pong"), msg)
	}
	switch len(args) {
	case 1:
		return resp.Simple("PONG")
	case 2:
		return resp.Bulk(args[1])
	}
	return resp.ErrWrongArity("ping")
}

func cmdEcho(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	return resp.Bulk(args[1])
}

func cmdHello(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	a, bad := resp.ParseHello(args)
	if bad.IsError() {
		return bad
	}
	if a.Auth != nil {
		if r := n.authenticate(cs, a.Auth[0], a.Auth[1]); r.IsError() {
			return r
		}
	}
	if n.admit(cs).IsError() {
		return resp.ErrHelloNoAuth
	}
	cs.mu.Lock()
	if a.Proto != 0 {
		cs.proto = a.Proto
	}
	if a.SetName != nil {
		cs.name = *a.SetName
	}
	cs.mu.Unlock()
	fields := []resp.Reply{
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(redisVersion),
		resp.BulkString("proto"), resp.Int(int64(cs.proto)),
		resp.BulkString("id"), resp.Int(cs.id),
		resp.BulkString("mode"), resp.BulkString("cluster"),
		resp.BulkString("role"), resp.BulkString("master"),
		resp.BulkString("modules"), resp.Array(),
	}
	if self, ok := n.Ctl.Map().Node(n.NodeID); ok && self.Zone != "" {
		// Valkey 8's field, which zone-aware clients read to prefer
		// nodes near them (decision 0021).
		fields = append(fields, resp.BulkString("availability_zone"), resp.BulkString(self.Zone))
	}
	return resp.Map(fields...)
}

// redisVersion is the Redis version memgest's command set follows; clients
// use it to pick features (HELLO, INFO server).
const redisVersion = "7.2.0"

func cmdAuth(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	user, pass := "default", string(args[1])
	if len(args) == 3 {
		user, pass = string(args[1]), string(args[2])
	} else if len(args) > 3 {
		return resp.Err("ERR syntax error")
	}
	return n.authenticate(cs, user, pass)
}

func cmdSelect(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	db, ok := resp.ParseInt(args[1])
	if !ok {
		return resp.Err("ERR value is not an integer or out of range")
	}
	if db != 0 {
		return resp.Err("ERR SELECT is not allowed in cluster mode")
	}
	return resp.OK()
}

func cmdClient(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	switch sub := strings.ToUpper(string(args[1])); sub {
	case "ID":
		return resp.Int(cs.id)
	case "GETNAME":
		if cs.name == "" {
			return resp.Nil()
		}
		return resp.BulkString(cs.name)
	case "SETNAME":
		return clientSetName(cs, args)
	case "INFO":
		return resp.Verbatim("txt", clientLine(cs, time.Now())+"\n")
	case "LIST":
		return n.clientList(args)
	case "KILL":
		return n.clientKill(cs, args)
	case "HELP":
		return resp.BulkStrings(clientHelp...)
	case "SETINFO", "NO-EVICT", "NO-TOUCH", "REPLY":
		return resp.OK()
	}
	return resp.Errorf("ERR unknown subcommand '%s'. Try CLIENT HELP.", args[1])
}

func clientSetName(cs *connState, args [][]byte) resp.Reply {
	if len(args) != 3 {
		return resp.Err("ERR wrong number of arguments for 'client|setname' command")
	}
	for _, c := range args[2] {
		if c <= ' ' || c > '~' {
			return resp.Err("ERR Client names cannot contain spaces, newlines or special characters.")
		}
	}
	cs.mu.Lock()
	cs.name = string(args[2])
	cs.mu.Unlock()
	return resp.OK()
}

// clientLine is one CLIENT LIST line with the fields clients parse.
func clientLine(cs *connState, now time.Time) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	last := "NULL"
	if spec := cs.lastCmd.Load(); spec != nil {
		last = spec.Name
	}
	flags, subs := "N", [kinds]int32{}
	if s := cs.pubsub; s != nil {
		for k := range kinds {
			subs[k] = s.counts[k].Load()
		}
		if s.total() > 0 {
			flags = "P"
		}
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=0 flags=%s db=0 sub=%d psub=%d ssub=%d multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=-1 resp=%s",
		cs.id, cs.addr, cs.laddr, cs.name, int(now.Sub(cs.created).Seconds()), flags,
		subs[kindChannel], subs[kindPattern], subs[kindShard], last, strconv.Itoa(cs.proto))
}

// clientList is CLIENT LIST [TYPE type | ID id [id ...]], parsed as Redis 7
// parses it: every memgest client is of type normal, and IDs list their
// clients in the order given.
func (n *Server) clientList(args [][]byte) resp.Reply {
	clients := n.clients.list()
	switch {
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		normal, bad := isNormalType(string(args[3]))
		if bad.IsError() {
			return bad
		}
		if !normal {
			clients = nil
		}
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		byID := make(map[int64]*connState, len(clients))
		for _, c := range clients {
			byID[c.id] = c
		}
		clients = clients[:0]
		for _, a := range args[3:] {
			id, ok := resp.ParseInt(a)
			if !ok {
				return resp.Err("ERR Invalid client ID")
			}
			if c := byID[id]; c != nil {
				clients = append(clients, c)
			}
		}
	case len(args) != 2:
		return resp.Err("ERR syntax error")
	}
	var b strings.Builder
	for _, c := range clients {
		b.WriteString(clientLine(c, time.Now()) + "\n")
	}
	return resp.Verbatim("txt", b.String())
}

// isNormalType reads a client type name of CLIENT LIST and CLIENT KILL:
// memgest's clients are all "normal"; the other types Redis knows have
// none.
func isNormalType(name string) (bool, resp.Reply) {
	switch strings.ToLower(name) {
	case "normal":
		return true, resp.Reply{}
	case "master", "replica", "slave", "pubsub":
		return false, resp.Reply{}
	}
	return false, resp.Errorf("ERR Unknown client type '%s'", name)
}

var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GETNAME", "    Return the name of the current connection.",
	"ID", "    Return the ID of the current connection.",
	"INFO", "    Return information about the current client connection.",
	"KILL <ip:port>", "    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are: ID <client-id>, ADDR <ip:port>, LADDR <ip:port>,",
	"    TYPE normal, USER default, MAXAGE <seconds>, SKIPME (YES|NO) (default YES).",
	"LIST [options ...]", "    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
	"    * ID <client-id> [<client-id> ...]", "      Return clients of specified IDs only.",
	"SETNAME <name>", "    Assign the name <name> to the current connection.",
	"HELP", "    Print this help.",
}

// killFilter is CLIENT KILL's new-style filter; zero fields match all.
type killFilter struct {
	id           int64
	addr, laddr  string
	maxAge       int64
	skipMe       bool
	matchNothing bool // TYPE or USER that no memgest client has
}

// clientKill is CLIENT KILL: the old form closes the client at an address
// and answers OK; the filter form closes every matching client and counts
// them. A client killing itself gets its reply, then is closed.
func (n *Server) clientKill(cs *connState, args [][]byte) resp.Reply {
	if len(args) == 3 {
		for _, c := range n.clients.list() {
			if c.addr == string(args[2]) {
				kill(cs, c)
				return resp.OK()
			}
		}
		return resp.Err("ERR No such client")
	}
	f, bad := parseKillFilter(args[2:])
	if bad.IsError() {
		return bad
	}
	killed := 0
	for _, c := range n.clients.list() {
		if f.matches(c, cs, time.Now()) {
			kill(cs, c)
			killed++
		}
	}
	return resp.Int(int64(killed))
}

func parseKillFilter(args [][]byte) (killFilter, resp.Reply) {
	f := killFilter{skipMe: true}
	if len(args)%2 != 0 {
		return f, resp.Err("ERR syntax error")
	}
	for i := 0; i < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToUpper(string(args[i])) {
		case "ID":
			id, ok := resp.ParseInt(args[i+1])
			if !ok || id < 1 {
				return f, resp.Err("ERR client-id should be greater than 0")
			}
			f.id = id
		case "ADDR":
			f.addr = v
		case "LADDR":
			f.laddr = v
		case "MAXAGE":
			age, ok := resp.ParseInt(args[i+1])
			if !ok {
				return f, resp.Err("ERR syntax error")
			}
			f.maxAge = age
		case "SKIPME":
			switch strings.ToLower(v) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				return f, resp.Err("ERR syntax error")
			}
		case "TYPE":
			normal, bad := isNormalType(v)
			if bad.IsError() {
				return f, bad
			}
			f.matchNothing = !normal // the last TYPE counts, as in Redis
		case "USER":
			if v != "default" {
				return f, resp.Errorf("ERR No such user '%s'", v)
			}
		default:
			return f, resp.Err("ERR syntax error")
		}
	}
	return f, resp.Reply{}
}

func (f killFilter) matches(c, self *connState, now time.Time) bool {
	switch {
	case f.matchNothing, f.skipMe && c == self:
		return false
	case f.id != 0 && c.id != f.id, f.addr != "" && c.addr != f.addr, f.laddr != "" && c.laddr != f.laddr:
		return false
	case f.maxAge > 0 && int64(now.Sub(c.created).Seconds()) < f.maxAge:
		return false
	}
	return true
}

// kill closes c: at once for another connection (its read loop then ends),
// after the reply for the connection running the command.
func kill(self, c *connState) {
	if c == self {
		c.killed.Store(true)
		return
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
}
