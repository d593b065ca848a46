package commands

import "testing"

// A kind's details render as Redis would answer them: text as bulk
// strings, numbers and flags as integers, lists as arrays.
func TestDetailReplies(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"3/1/7", "$5\r\n3/1/7\r\n"},
		{int64(42), ":42\r\n"},
		{true, ":1\r\n"},
		{false, ":0\r\n"},
		{[]string{"a", "bc"}, "*2\r\n$1\r\na\r\n$2\r\nbc\r\n"},
	} {
		if got := string(detailReply(c.v).AppendTo(nil, 2)); got != c.want {
			t.Errorf("%#v answers %q, want %q", c.v, got, c.want)
		}
	}
}
