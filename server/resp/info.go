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
// want holds INFO's arguments, and a section is rendered if InfoSelects
// says so. The result goes out as a verbatim "txt" string in RESP3 and a
// bulk string in RESP2, as Redis 7 sends it.
func RenderInfo(sections []InfoSection, want []string) []byte {
	var out []byte
	n := 0
	for _, sec := range sections {
		if !InfoSelects(want, sec.Name, sec.Extra) {
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

// InfoSelects says whether INFO with arguments want shows the section
// named name (extra if left out of the default selection). Arguments match
// ignoring case: section names, "default" (every section not extra; also
// what no argument means), "all" and "everything" (every section; memgest
// has no module sections, which only "everything" adds in Redis). Unknown
// names select nothing. Callers may use it to build only the sections
// asked for.
func InfoSelects(want []string, name string, extra bool) bool {
	if len(want) == 0 {
		return !extra
	}
	for _, w := range want {
		switch {
		case strings.EqualFold(w, "all"), strings.EqualFold(w, "everything"),
			strings.EqualFold(w, name), strings.EqualFold(w, "default") && !extra:
			return true
		}
	}
	return false
}
