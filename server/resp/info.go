package resp

import "strings"

// InfoSection is one section of INFO's output.
type InfoSection struct {
	// Name is the title as printed after "# " ("Server", "CPU",
	// "Keyspace"); selection compares it in lower case.
	Name string
	// Fields are (name, value) pairs printed as "name:value".
	Fields [][2]string
	// Extra marks a section left out of the default selection, as Redis
	// leaves out commandstats and latencystats.
	Extra bool
}

// RenderInfo renders sections in the order given, as Redis's INFO does:
// "# Server\r\nfield:value\r\n...", sections separated by an empty line.
// want holds INFO's arguments, matched ignoring case: section names,
// "default" (every section not marked Extra; also what no argument
// means), "all" and "everything" (every section). Unknown names select
// nothing. The result goes out as a verbatim "txt" string in RESP3 and a
// bulk string in RESP2, as Redis 7 sends it.
func RenderInfo(sections []InfoSection, want []string) []byte {
	all, dflt := false, len(want) == 0
	named := make(map[string]bool, len(want))
	for _, w := range want {
		switch w = strings.ToLower(w); w {
		case "all", "everything":
			all = true
		case "default":
			dflt = true
		default:
			named[w] = true
		}
	}
	var out []byte
	n := 0
	for _, sec := range sections {
		if !all && !named[strings.ToLower(sec.Name)] && (!dflt || sec.Extra) {
			continue
		}
		if n > 0 {
			out = append(out, crlf...)
		}
		n++
		out = append(append(append(out, "# "...), sec.Name...), crlf...)
		for _, f := range sec.Fields {
			out = append(append(append(append(out, f[0]...), ':'), f[1]...), crlf...)
		}
	}
	return out
}
