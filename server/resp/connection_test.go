package resp

import "testing"

func TestParseHello(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		line    string
		proto   int
		auth    *[2]string
		setname *string
		err     string
	}{
		{"HELLO", 0, nil, nil, ""},
		{"HELLO 3", 3, nil, nil, ""},
		{"hello 2 auth default secret", 2, &[2]string{"default", "secret"}, nil, ""},
		{"HELLO 3 SETNAME app-1 AUTH u p", 3, &[2]string{"u", "p"}, str("app-1"), ""},
		{"HELLO 3 SETNAME ", 3, nil, str(""), ""},
		{"HELLO 3 SETNAME a SETNAME b", 3, nil, str("b"), ""},
		{"HELLO 1", 0, nil, nil, "NOPROTO unsupported protocol version"},
		{"HELLO 4", 0, nil, nil, "NOPROTO unsupported protocol version"},
		{"HELLO -3", 0, nil, nil, "NOPROTO unsupported protocol version"},
		{"HELLO three", 0, nil, nil, "ERR Protocol version is not an integer or out of range"},
		{"HELLO 03", 0, nil, nil, "ERR Protocol version is not an integer or out of range"},
		{"HELLO AUTH u p", 0, nil, nil, "ERR Protocol version is not an integer or out of range"},
		{"HELLO 3 AUTH u", 0, nil, nil, "ERR Syntax error in HELLO option 'AUTH'"},
		{"HELLO 3 SETNAME", 0, nil, nil, "ERR Syntax error in HELLO option 'SETNAME'"},
		{"HELLO 3 foo", 0, nil, nil, "ERR Syntax error in HELLO option 'foo'"},
		{"HELLO 3 SETNAME bad\x01name", 0, nil, nil, "ERR Client names cannot contain spaces, newlines or special characters."},
	}
	for _, c := range cases {
		a, r := ParseHello(argv(c.line))
		if r.Text() != c.err || a.Proto != c.proto ||
			(a.Auth == nil) != (c.auth == nil) || (a.Auth != nil && *a.Auth != *c.auth) ||
			(a.SetName == nil) != (c.setname == nil) || (a.SetName != nil && *a.SetName != *c.setname) {
			t.Errorf("%q: %+v %q; want proto %d auth %v setname %v %q", c.line, a, r.Text(), c.proto, c.auth, c.setname, c.err)
		}
	}
}

func TestCheckClientName(t *testing.T) {
	for _, ok := range []string{"", "a", "app-1", "!~", "x:y/z"} {
		if CheckClientName([]byte(ok)).IsError() {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{" ", "a b", "a\nb", "\x7f", "caf\xc3\xa9", "\x00"} {
		if !CheckClientName([]byte(bad)).Equal(ErrClientName) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestHelloReply(t *testing.T) {
	r := Hello(HelloInfo{Server: "redis", Version: "7.2.0", Proto: 3, ID: 7, Mode: "cluster", Role: "master"})
	want3 := "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.0\r\n$5\r\nproto\r\n:3\r\n" +
		"$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$7\r\ncluster\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	if got := string(r.AppendTo(nil, 3)); got != want3 {
		t.Errorf("RESP3 %q", got)
	}
	if got := string(r.AppendTo(nil, 2)); got != "*14"+want3[2:] {
		t.Errorf("RESP2 %q", got)
	}
}

func TestParseAuth(t *testing.T) {
	cases := []struct {
		line string
		want AuthArgs
		err  string
	}{
		{"AUTH secret", AuthArgs{Password: "secret"}, ""},
		{"AUTH alice secret", AuthArgs{Username: "alice", Password: "secret"}, ""},
		{"AUTH a b c", AuthArgs{}, "ERR syntax error"},
		{"AUTH", AuthArgs{}, "ERR wrong number of arguments for 'auth' command"},
	}
	for _, c := range cases {
		got, r := ParseAuth(argv(c.line))
		if got != c.want || r.Text() != c.err {
			t.Errorf("%q: %+v %q", c.line, got, r.Text())
		}
	}
}

func TestParseSelect(t *testing.T) {
	cases := []struct{ line, err string }{
		{"SELECT 0", ""},
		{"SELECT 1", "ERR SELECT is not allowed in cluster mode"},
		{"SELECT -1", "ERR SELECT is not allowed in cluster mode"},
		{"SELECT 2147483647", "ERR SELECT is not allowed in cluster mode"},
		{"SELECT 2147483648", "ERR value is not an integer or out of range"},
		{"SELECT x", "ERR value is not an integer or out of range"},
		{"SELECT -0", "ERR value is not an integer or out of range"},
		{"SELECT", "ERR wrong number of arguments for 'select' command"},
	}
	for _, c := range cases {
		if _, r := ParseSelect(argv(c.line)); r.Text() != c.err {
			t.Errorf("%q: %q, want %q", c.line, r.Text(), c.err)
		}
	}
}
