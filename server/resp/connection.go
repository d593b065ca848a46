package resp

// HelloArgs are the parsed HELLO [protover [AUTH user pass] [SETNAME
// name]] arguments.
type HelloArgs struct {
	// Proto is 2 or 3, or 0 when HELLO came without a version and only
	// reports the connection's context.
	Proto int
	// Auth is the (username, password) pair of the AUTH option, or nil.
	Auth *[2]string
	// SetName is the SETNAME name, or nil; an empty name clears it.
	SetName *string
}

// ParseHello parses args ("HELLO" ...) in Redis 7's order: a version that
// is not an integer is "ERR Protocol version is not an integer or out of
// range", one other than 2 or 3 is "NOPROTO unsupported protocol version";
// then options left to right, where AUTH needs two values and SETNAME one
// valid client name ([CheckClientName]), and anything else is "ERR Syntax
// error in HELLO option '<opt>'". Authentication itself, and
// [ErrHelloNoAuth] for an unauthenticated connection without AUTH, are the
// caller's.
func ParseHello(args [][]byte) (HelloArgs, Reply) {
	var a HelloArgs
	next := 1
	if len(args) >= 2 {
		v, ok := ParseInt(args[1])
		if !ok {
			return a, ErrProtoVersion
		}
		if v < 2 || v > 3 {
			return a, ErrNoProto
		}
		a.Proto, next = int(v), 2
	}
	for j := next; j < len(args); j++ {
		opt, more := args[j], len(args)-1-j
		switch {
		case equalFold(opt, "auth") && more >= 2:
			a.Auth = &[2]string{string(args[j+1]), string(args[j+2])}
			j += 2
		case equalFold(opt, "setname") && more >= 1:
			if r := CheckClientName(args[j+1]); r.IsError() {
				return HelloArgs{}, r
			}
			name := string(args[j+1])
			a.SetName = &name
			j++
		default:
			return HelloArgs{}, Err("ERR Syntax error in HELLO option '" + cString(string(opt), len(opt)) + "'")
		}
	}
	return a, Reply{}
}

// CheckClientName accepts names of printable ASCII without spaces ('!'
// through '~') and the empty name, which clears the name; otherwise it is
// [ErrClientName]. CLIENT SETNAME and HELLO SETNAME share it.
func CheckClientName(name []byte) Reply {
	for _, c := range name {
		if c < '!' || c > '~' {
			return ErrClientName
		}
	}
	return Reply{}
}

// HelloInfo is what HELLO reports about the server and the connection.
type HelloInfo struct {
	Server  string // "redis" for clients that check it
	Version string // e.g. "7.2.0"
	Proto   int    // the protocol now in force
	ID      int64  // client id
	Mode    string // "cluster" or "standalone"
	Role    string // "master" or "replica"
}

// Hello is HELLO's reply: a map of server, version, proto, id, mode, role
// and an empty modules list (a flat array in RESP2).
func Hello(h HelloInfo) Reply {
	return Map(
		BulkString("server"), BulkString(h.Server),
		BulkString("version"), BulkString(h.Version),
		BulkString("proto"), Int(int64(h.Proto)),
		BulkString("id"), Int(h.ID),
		BulkString("mode"), BulkString(h.Mode),
		BulkString("role"), BulkString(h.Role),
		BulkString("modules"), Array(),
	)
}

// AuthArgs are the parsed AUTH [username] password arguments.
type AuthArgs struct {
	// Username is empty in the one-argument form, which authenticates the
	// "default" user (and gets [ErrAuthNoPassword] if it has none).
	Username string
	Password string
}

// ParseAuth parses args ("AUTH" [username] password); more than two
// arguments is "ERR syntax error".
func ParseAuth(args [][]byte) (AuthArgs, Reply) {
	switch len(args) {
	case 2:
		return AuthArgs{Password: string(args[1])}, Reply{}
	case 3:
		return AuthArgs{Username: string(args[1]), Password: string(args[2])}, Reply{}
	case 0, 1:
		return AuthArgs{}, ErrWrongArity("auth")
	}
	return AuthArgs{}, ErrSyntax
}

// ParseSelect parses SELECT index for a server in cluster mode, which
// memgest always is: an index that is not an integer within 32 bits is
// [ErrNotInteger], any index but 0 is "ERR SELECT is not allowed in cluster
// mode" (Redis Cluster's answer), and 0 is accepted.
func ParseSelect(args [][]byte) (int, Reply) {
	if len(args) != 2 {
		return 0, ErrWrongArity("select")
	}
	id, ok := ParseInt(args[1])
	if !ok || id < -1<<31 || id > 1<<31-1 {
		return 0, ErrNotInteger
	}
	if id != 0 {
		return 0, ErrSelectCluster
	}
	return 0, Reply{}
}
