package resp

import (
	"math"
	"testing"
)

// renderCase is one reply with its exact wire form in each protocol. The
// RESP3 forms of the aggregate and scalar types are the examples of the
// RESP3 specification (github.com/antirez/RESP3, spec.md).
type renderCase struct {
	name         string
	r            Reply
	resp2, resp3 string
}

var renderCases = []renderCase{
	{"ok", OK(), "+OK\r\n", "+OK\r\n"},
	{"simple", Simple("PONG"), "+PONG\r\n", "+PONG\r\n"},
	{"simple newline", Simple("a\r\nb"), "+a  b\r\n", "+a  b\r\n"},
	{"error", Err("ERR unknown command 'foobar'"), "-ERR unknown command 'foobar'\r\n", "-ERR unknown command 'foobar'\r\n"},
	{"error newline", Err("ERR a\nb"), "-ERR a b\r\n", "-ERR a b\r\n"},
	{"errorf", Errorf("MOVED %d %s", 3999, "127.0.0.1:6381"), "-MOVED 3999 127.0.0.1:6381\r\n", "-MOVED 3999 127.0.0.1:6381\r\n"},
	{"int", Int(1234), ":1234\r\n", ":1234\r\n"},
	{"negative int", Int(math.MinInt64), ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
	{"bulk", BulkString("hello"), "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
	{"bulk bytes", Bulk([]byte("a\r\nb")), "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
	{"empty bulk", Bulk(nil), "$0\r\n\r\n", "$0\r\n\r\n"},
	{"nil", Nil(), "$-1\r\n", "_\r\n"},
	{"nil array", NilArray(), "*-1\r\n", "_\r\n"},
	{"array", Array(Int(1), Int(2), Int(3)), "*3\r\n:1\r\n:2\r\n:3\r\n", "*3\r\n:1\r\n:2\r\n:3\r\n"},
	{"empty array", Array(), "*0\r\n", "*0\r\n"},
	{"bulk strings", BulkStrings("a", "bc"), "*2\r\n$1\r\na\r\n$2\r\nbc\r\n", "*2\r\n$1\r\na\r\n$2\r\nbc\r\n"},
	{"nested", Array(Array(Int(1), Nil()), BulkString("x")),
		"*2\r\n*2\r\n:1\r\n$-1\r\n$1\r\nx\r\n", "*2\r\n*2\r\n:1\r\n_\r\n$1\r\nx\r\n"},
	{"map", Map(Simple("first"), Int(1), Simple("second"), Int(2)),
		"*4\r\n+first\r\n:1\r\n+second\r\n:2\r\n", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n"},
	{"empty map", Map(), "*0\r\n", "%0\r\n"},
	{"set", Set(Simple("orange"), Simple("apple"), Bool(true), Int(100), Int(999)),
		"*5\r\n+orange\r\n+apple\r\n:1\r\n:100\r\n:999\r\n", "~5\r\n+orange\r\n+apple\r\n#t\r\n:100\r\n:999\r\n"},
	{"push", Push(BulkString("message"), BulkString("ch"), BulkString("hi")),
		"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
	{"double", Double(1.23), "$4\r\n1.23\r\n", ",1.23\r\n"},
	{"double integral", Double(10), "$2\r\n10\r\n", ",10\r\n"},
	{"double inf", Double(math.Inf(1)), "$3\r\ninf\r\n", ",inf\r\n"},
	{"double -inf", Double(math.Inf(-1)), "$4\r\n-inf\r\n", ",-inf\r\n"},
	{"double nan", Double(math.NaN()), "$3\r\nnan\r\n", ",nan\r\n"},
	{"double -0", Double(math.Copysign(0, -1)), "$2\r\n-0\r\n", ",-0\r\n"},
	{"true", Bool(true), ":1\r\n", "#t\r\n"},
	{"false", Bool(false), ":0\r\n", "#f\r\n"},
	{"verbatim", Verbatim("txt", "Some string"), "$11\r\nSome string\r\n", "=15\r\ntxt:Some string\r\n"},
	{"verbatim short format", Verbatim("md", ""), "$0\r\n\r\n", "=4\r\nmd :\r\n"},
	{"big number", BigNumber("3492890328409238509324850943850943825024385"),
		"$43\r\n3492890328409238509324850943850943825024385\r\n", "(3492890328409238509324850943850943825024385\r\n"},
	{"attribute", WithAttributes(Array(Int(2039123), Int(9543892)),
		Simple("key-popularity"), Map(BulkString("a"), Double(0.1923), BulkString("b"), Double(0.0012))),
		"*2\r\n:2039123\r\n:9543892\r\n",
		"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n"},
	{"zero", Reply{}, "", ""},
}

func TestRender(t *testing.T) {
	for _, c := range renderCases {
		if got := string(c.r.AppendTo(nil, 2)); got != c.resp2 {
			t.Errorf("%s: RESP2 %q, want %q", c.name, got, c.resp2)
		}
		if got := string(c.r.AppendTo(nil, 3)); got != c.resp3 {
			t.Errorf("%s: RESP3 %q, want %q", c.name, got, c.resp3)
		}
	}
}

func TestRenderAppends(t *testing.T) {
	dst := []byte("prefix")
	if got := string(Int(7).AppendTo(dst, 3)); got != "prefix:7\r\n" {
		t.Fatalf("AppendTo does not append: %q", got)
	}
}

// A blob error that carries a line break (only Parse can make one) goes
// back out as a blob error in RESP3 and with spaces in RESP2.
func TestRenderBlobError(t *testing.T) {
	r, _, err := Parse([]byte("!10\r\nERR a\r\nb c\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError() || r.Text() != "ERR a\r\nb c" {
		t.Fatalf("parsed %v", r)
	}
	if got := string(r.AppendTo(nil, 3)); got != "!10\r\nERR a\r\nb c\r\n" {
		t.Errorf("RESP3 %q", got)
	}
	if got := string(r.AppendTo(nil, 2)); got != "-ERR a  b c\r\n" {
		t.Errorf("RESP2 %q", got)
	}
}

// The double layout follows Redis 7.2's d2string and fpconv_dtoa.
func TestFormatDouble(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{1.5, "1.5"}, {-2.5, "-2.5"}, {0.1, "0.1"}, {123.456, "123.456"},
		{0.001, "0.001"}, {0.001234, "0.001234"}, {0.0001234, "1.234e-4"},
		{1e-7, "1e-7"}, {1.5e-10, "1.5e-10"}, {1234567.5, "1234567.5"},
		{1e7, "10000000"}, {1e18, "1000000000000000000"},
		{1 << 62, "4611686018427387904"}, {1 << 63, "9223372036854776000"},
		{1e21, "1e+21"}, {1e22, "1e+22"}, {1.2345e25, "1.2345e+25"},
		{5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{-1e300, "-1e+300"},
	}
	for _, c := range cases {
		if got := formatDouble(c.f); got != c.want {
			t.Errorf("formatDouble(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestAccessors(t *testing.T) {
	v := Verbatim("txt", "hi")
	if v.Format() != "txt" || v.Text() != "hi" || v.Kind() != KindVerbatim {
		t.Errorf("verbatim accessors: %q %q", v.Format(), v.Text())
	}
	if Double(2.5).Float() != 2.5 || Int(3).Int() != 3 || !Bool(true).Bool() || Bool(false).Bool() {
		t.Error("scalar accessors")
	}
	a := WithAttributes(Int(1), Simple("k"), Simple("v"))
	if len(a.Items()) != 2 || !a.Unwrap().Equal(Int(1)) || !Int(1).Unwrap().Equal(Int(1)) {
		t.Error("attribute accessors")
	}
	if !Nil().IsNil() || !NilArray().IsNil() || Array().IsNil() || !(Reply{}).IsZero() || OK().IsZero() {
		t.Error("nil and zero predicates")
	}
	if !Err("ERR x").IsError() || OK().IsError() {
		t.Error("IsError")
	}
	if got := Array(OK(), Err("ERR x"), Int(1), BulkString("b"), Nil()).String(); got != `(array)[OK, (error) ERR x, (integer) 1, "b", (nil)]` {
		t.Errorf("String() = %s", got)
	}
}

func TestEqual(t *testing.T) {
	if !Double(math.NaN()).Equal(Double(math.NaN())) {
		t.Error("NaN must equal NaN")
	}
	pairs := [][2]Reply{
		{Int(1), Int(2)}, {Int(1), Bool(true)}, {Nil(), NilArray()}, {Simple("a"), BulkString("a")},
		{Array(Int(1)), Array(Int(2))}, {Array(Int(1)), Array()}, {Double(1), Double(2)},
	}
	for _, p := range pairs {
		if p[0].Equal(p[1]) {
			t.Errorf("%v equals %v", p[0], p[1])
		}
	}
}

func TestMapOddPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Map with an odd item count did not panic")
		}
	}()
	Map(Int(1))
}
