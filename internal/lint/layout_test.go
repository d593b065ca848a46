package lint

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxShare is the most of the project's code lines one package may hold
// (issue 24): past it, a package is a floor plan that cannot take the next
// scheme, not a room.
const maxShare = 0.30

// kindNames are the scheme kinds (scheme.Kind values). Outside the scheme
// packages nothing compares against them: a kind's behaviour lives in its
// package, behind scheme/kind (decision 0007).
var kindNames = map[string]bool{"None": true, "Rep": true, "Split": true, "Stripe": true, "Hybrid": true}

// walkSource calls fn for every non-test Go file of the module (outside
// scripts/, testdata and hidden directories) with its directory relative
// to the module root.
func walkSource(t *testing.T, root string, fn func(dir, path string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "scripts") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		fn(filepath.ToSlash(dir), path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// overShare lists the packages of lines (package → code lines) that hold
// more than share of all of them.
func overShare(lines map[string]int, share float64) []string {
	total := 0
	for _, n := range lines {
		total += n
	}
	var out []string
	for dir, n := range lines {
		if float64(n) > share*float64(total) {
			out = append(out, dir)
		}
	}
	return out
}

func TestNoPackageHoldsMoreThanItsShare(t *testing.T) {
	lines := map[string]int{}
	walkSource(t, moduleRoot(t), func(dir, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines[dir] += bytes.Count(b, []byte("\n"))
	})
	if len(lines) < 10 {
		t.Fatalf("counted %d packages; the walk missed the tree", len(lines))
	}
	for _, dir := range overShare(lines, maxShare) {
		t.Errorf("package %s holds %d code lines, more than %.0f%% of the project's: split it into rooms of their own", dir, lines[dir], maxShare*100)
	}
}

// The share check catches a package past the bar, and passes one below it.
func TestOverShareCatchesAPlantedPackage(t *testing.T) {
	if got := overShare(map[string]int{"server": 31, "a": 23, "b": 23, "c": 23}, maxShare); len(got) != 1 || got[0] != "server" {
		t.Fatalf("31 of 100 lines: %v, want [server]", got)
	}
	if got := overShare(map[string]int{"server": 30, "a": 24, "b": 23, "c": 23}, maxShare); len(got) != 0 {
		t.Fatalf("30 of 100 lines: %v, want none", got)
	}
}

// kindComparisons lists where the file src (of a package outside scheme/)
// names a scheme kind: scheme.None, scheme.Rep, … of the spec package.
func kindComparisons(fset *token.FileSet, f *ast.File) []string {
	spec := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"`+module+`/scheme"` {
			spec = "scheme"
			if imp.Name != nil {
				spec = imp.Name.Name
			}
		}
	}
	if spec == "" {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == spec && kindNames[sel.Sel.Name] {
				out = append(out, fset.Position(sel.Pos()).String()+": "+spec+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

func TestNoKindComparisonsOutsideTheSchemePackages(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	walkSource(t, moduleRoot(t), func(dir, path string) {
		if under(dir, "scheme") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, c := range kindComparisons(fset, f) {
			t.Errorf("%s: a scheme kind named outside the scheme packages (ask the bound kind.Scheme instead)", c)
		}
	})
	if files < 50 {
		t.Fatalf("parsed %d files; the walk missed the tree", files)
	}
}

// The kind check catches a planted comparison, renamed import included,
// and passes other names of the spec package.
func TestKindComparisonsCatchAPlantedOne(t *testing.T) {
	src := `package x
import sp "` + module + `/scheme"
func f(k sp.Kind) bool { _ = sp.Parse; return k == sp.Stripe }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := kindComparisons(fset, f); len(got) != 1 || !strings.HasSuffix(got[0], "sp.Stripe") {
		t.Fatalf("found %v, want the one sp.Stripe", got)
	}
}
