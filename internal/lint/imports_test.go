// Package lint holds tests that check properties of the source tree itself
// rather than of any one package's behaviour.
package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/memgest/memgest"

// leaves are packages that must import nothing from the project but other
// leaves, so that the codec, the node-local store and the reliability model
// stay reusable and free of cycles (STYLE.md item 1). internal/bigcopy
// (stepwise copies of huge values) is a leaf the store and the RESP layer
// use.
var leaves = []string{"ec", "store", "reliability", "server/resp", "internal/bigcopy"}

// Nothing may import the binary or the multi-process tests.
var forbidden = []string{"cmd/", "tests"}

func TestImportDirection(t *testing.T) {
	root := moduleRoot(t)
	for dir, imports := range projectImports(t, root) {
		for _, imp := range imports {
			rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if rel == dir {
				continue // an external test package importing its own package
			}
			for _, leaf := range leaves {
				if (dir == leaf || strings.HasPrefix(dir, leaf+"/")) && !isLeaf(rel) {
					t.Errorf("%s imports %s: %s must not depend on the rest of memgest", dir, imp, leaf)
				}
			}
			for _, f := range forbidden {
				if strings.HasPrefix(rel, f) {
					t.Errorf("%s imports %s: nothing may import %s", dir, imp, f)
				}
			}
		}
	}
}

// isLeaf says whether the package at rel (relative to the module root) is
// one of the leaves.
func isLeaf(rel string) bool {
	for _, leaf := range leaves {
		if rel == leaf {
			return true
		}
	}
	return false
}

// projectImports maps each package directory (relative to the module root)
// to the project packages its Go files, tests included, import.
func projectImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(imp, module+"/") {
				out[filepath.ToSlash(dir)] = append(out[filepath.ToSlash(dir)], imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// The check must see the tree: a walk that found nothing would pass vacuously.
func TestImportScanSeesTheTree(t *testing.T) {
	imports := projectImports(t, moduleRoot(t))
	found := false
	for _, imp := range imports["ec"] {
		found = found || imp == module+"/ec" // ec's Example imports ec
	}
	if !found {
		t.Fatalf("scan did not find ec's example importing ec; got %v", imports)
	}
}
