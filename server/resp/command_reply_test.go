package resp

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or rewrites the file with
// -rewrite. The files hold raw RESP, CRLFs included.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs:\ngot  %q\nwant %q", name, got, want)
	}
}

// The golden transcripts pin COMMAND's replies byte for byte in both
// protocols; the RESP3 ones were checked field by field against Redis
// 7.2's addReplyCommandInfo and addReplyCommandDocs.
func TestCommandGolden(t *testing.T) {
	cases := []struct{ file, line string }{
		{"command-info-get-set-nosuch", "COMMAND INFO get SET nosuch"},
		{"command-info-mset-scan", "COMMAND INFO mset scan"},
		{"command-info-scheme", "COMMAND INFO scheme"},
		{"command-info-subcommand", "COMMAND INFO client|list scheme.of"},
		{"command-docs", "COMMAND DOCS get quit cluster|slots nosuch"},
		{"command-docs-container", "COMMAND DOCS config"},
		{"command-help", "COMMAND HELP"},
	}
	for _, c := range cases {
		r := CommandCommand(argv(c.line))
		golden(t, c.file+".resp2", r.AppendTo(nil, 2))
		golden(t, c.file+".resp3", r.AppendTo(nil, 3))
	}
}

func TestCommandCommand(t *testing.T) {
	count := len(Commands())
	cases := []struct {
		line string
		want Reply
	}{
		{"COMMAND COUNT", Int(int64(count))},
		{"COMMAND LIST FILTERBY PATTERN scheme*of", BulkStrings("scheme|of", "scheme.of")},
		{"COMMAND LIST FILTERBY pattern CONFIG|*ET", BulkStrings("config|get", "config|set")},
		{"COMMAND LIST FILTERBY MODULE foo", Array()},
		{"COMMAND LIST FILTERBY ACLCAT nosuch", Array()},
		{"COMMAND LIST FILTERBY ACLCAT DANGEROUS", BulkStrings("client|kill", "client|list",
			"config|get", "config|resetstat", "config|rewrite", "config|set", "debug", "flushall", "flushdb", "info", "keys")},
		{"COMMAND LIST FILTERBY BOGUS x", ErrSyntax},
		{"COMMAND LIST FILTERBY PATTERN", ErrSyntax},
		{"COMMAND LIST FILTERBY PATTERN a FILTERBY PATTERN b", ErrSyntax},
		{"COMMAND LIST extra", ErrSyntax},
		{"COMMAND GETKEYS MSET a 1 b 2", BulkStrings("a", "b")},
		{"COMMAND GETKEYS scheme of k", BulkStrings("k")},
		{"COMMAND GETKEYS SCHEME.MOVE k s", BulkStrings("k")},
		{"COMMAND GETKEYS GET", Err("ERR Invalid number of arguments specified for command")},
		{"COMMAND GETKEYS PING", Err("ERR The command has no key arguments")},
		{"COMMAND GETKEYS SCHEME LIST", Err("ERR The command has no key arguments")},
		{"COMMAND GETKEYS NOSUCH a", Err("ERR Invalid command specified")},
		{"COMMAND GETKEYS CLIENT NOSUCH", Err("ERR Invalid command specified")},
		{"COMMAND GETKEYSANDFLAGS SET k v", Array(Array(BulkString("k"),
			Set(Simple("RW"), Simple("access"), Simple("update"), Simple("variable_flags"))))},
		{"COMMAND GETKEYSANDFLAGS DEL a b", Array(
			Array(BulkString("a"), Set(Simple("RM"), Simple("delete"))),
			Array(BulkString("b"), Set(Simple("RM"), Simple("delete"))))},
		{"COMMAND GETKEYSANDFLAGS RENAME a b", Array(
			Array(BulkString("a"), Set(Simple("RW"), Simple("access"), Simple("delete"))),
			Array(BulkString("b"), Set(Simple("OW"), Simple("update"))))},
		{"COMMAND GETKEYS COPY a b DB 0 REPLACE", BulkStrings("a", "b")},
		{"COMMAND GETKEYS OBJECT ENCODING k", BulkStrings("k")},
		{"COMMAND DOCS nosuch", Map()},
		{"COMMAND NOSUCH", ErrUnknownSubcommand("command", "NOSUCH")},
	}
	for _, c := range cases {
		if got := CommandCommand(argv(c.line)); !got.Equal(c.want) {
			t.Errorf("%s:\ngot  %v\nwant %v", c.line, got, c.want)
		}
	}
	if all := CommandCommand(argv("COMMAND")); len(all.Items()) != count {
		t.Errorf("COMMAND gave %d entries", len(all.Items()))
	}
	if all := CommandCommand(argv("COMMAND INFO")); len(all.Items()) != count {
		t.Errorf("COMMAND INFO gave %d entries", len(all.Items()))
	}
	if all := CommandCommand(argv("COMMAND DOCS")); len(all.Items()) != 2*count {
		t.Errorf("COMMAND DOCS gave %d items", len(all.Items()))
	}
	list := CommandCommand(argv("COMMAND LIST"))
	var names []string
	for _, it := range list.Items() {
		names = append(names, it.Text())
	}
	joined := " " + strings.Join(names, " ") + " "
	for _, want := range []string{" get ", " client ", " client|list ", " scheme ", " scheme|of ", " scheme.of ", " command|docs "} {
		if !strings.Contains(joined, want) {
			t.Errorf("COMMAND LIST lacks %q", want)
		}
	}
}

func TestHelp(t *testing.T) {
	h := SchemeHelp()
	items := h.Items()
	if items[0].Text() != "SCHEME <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" ||
		items[len(items)-2].Text() != "HELP" || items[len(items)-1].Text() != "    Print this help." {
		t.Errorf("SCHEME HELP: %v", h)
	}
	for _, it := range items {
		if it.Kind() != KindSimple {
			t.Errorf("help line %v is not a simple string", it)
		}
	}
}
