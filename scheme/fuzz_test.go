package scheme

import (
	"errors"
	"testing"
)

// FuzzParse feeds Parse and CheckAlias arbitrary text: neither panics; a
// refusal is a SpecError (ErrSpec); an accepted spec is valid, prints in
// canonical form, and parses back to itself; its tolerance and width are
// consistent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"none", "rep:3", "REP:1", "split:4+2", "stripe:10+4", "hybrid:2+1",
		"rep:", "split:4+", "split:+2", "rep:-1", "split:99999999999999999999+1", "rep:3:4", "none:1", "", "x",
		"stripe:4+2@batch", "hybrid:4+2/512@auto:500us", "stripe:4+2@batch:0ms", "stripe:4+2@inplace"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = CheckAlias(s)
		sp, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("Parse(%q) refused with %v, not a SpecError", s, err)
			}
			return
		}
		if !sp.Valid() {
			t.Fatalf("Parse(%q) accepted %+v, which is not valid", s, sp)
		}
		again, err := Parse(sp.String())
		if err != nil || again != sp {
			t.Fatalf("Parse(%q) = %+v prints as %q, which parses to %+v, %v", s, sp, sp.String(), again, err)
		}
		if sp.Tolerance() < 0 || sp.Nodes() < 1 || (sp.Tolerance() >= sp.Nodes() && sp.Kind != None) {
			t.Fatalf("%s: tolerance %d with %d nodes", sp, sp.Tolerance(), sp.Nodes())
		}
	})
}
