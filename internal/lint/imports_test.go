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
// leaves, so that the codec, the node-local store, the transport, the peer
// payload codec, the RESP codec, the value types, the slot function, the scheme spec and the
// reliability model stay
// reusable and free of cycles (STYLE.md item 1). internal/bigcopy
// (stepwise copies of huge values) is a leaf the store and the RESP layer
// use.
var leaves = []string{"ec", "store", "transport", "wire", "reliability", "keyslot", "scheme",
	"server/resp", "object", "internal/bigcopy", "internal/faults", "internal/lograte", "internal/certs"}

// A rule says which packages (from) must not import which (to).
type rule struct {
	name string
	// from says whether the rule applies to the package in dir.
	from func(dir string) bool
	// refuses says whether the package at rel may not be imported.
	refuses func(rel string) bool
}

// rules are the import directions of docs/architecture.md.
var rules = []rule{
	{
		name:    "a leaf imports only leaves",
		from:    isLeaf,
		refuses: func(rel string) bool { return !isLeaf(rel) },
	},
	{
		name:    "nothing imports the binary or the multi-process tests",
		from:    func(string) bool { return true },
		refuses: func(rel string) bool { return under(rel, "cmd") || under(rel, "tests") },
	},
	{
		// A scheme kind works through its environment (scheme/kind.Env)
		// and the map: it never reaches into the node, nor into the
		// control plane's Raft.
		name:    "a scheme package imports neither the node nor the control plane's Raft",
		from:    func(dir string) bool { return strings.HasPrefix(dir, "scheme/") },
		refuses: func(rel string) bool { return under(rel, "server") || under(rel, "cluster/control") },
	},
	{
		// The coordinator core reaches every scheme through scheme/kind
		// and the registry the node hands it (decision 0007): a kind
		// package is the node's to import, so adding a kind never touches
		// the core.
		name: "the coordinator core imports no scheme kind package",
		from: func(dir string) bool { return under(dir, "server/core") },
		refuses: func(rel string) bool {
			return under(rel, "scheme") && rel != "scheme" && !under(rel, "scheme/kind")
		},
	},
	{
		// The node's rooms layer downward: config < peer < core <
		// {repair, commands} < the node (server), which composes them;
		// repair and the commands are siblings that never import each
		// other.
		name: "the core, the repair path and the commands import no room above or beside them",
		from: func(dir string) bool {
			return under(dir, "server/core") || under(dir, "server/repair") || under(dir, "server/commands")
		},
		refuses: func(rel string) bool {
			return rel == "server" || rel == "server/repair" || rel == "server/commands"
		},
	},
	{
		// internal/simcluster imports the node, so it is no leaf; it is a
		// harness for tests and stays out of the binary.
		name:    "the binary does not import the in-process test cluster",
		from:    func(dir string) bool { return under(dir, "cmd") },
		refuses: func(rel string) bool { return under(rel, "internal/simcluster") },
	},
	{
		// The reliability model is arithmetic over a cluster's shape
		// (docs/reliability.md): scheme specs map onto it (Spec.Model),
		// never the other way round.
		name:    "the reliability model imports nothing from the project",
		from:    func(dir string) bool { return under(dir, "reliability") },
		refuses: func(string) bool { return true },
	},
}

// under says whether rel is the package root or one below it.
func under(rel, root string) bool { return rel == root || strings.HasPrefix(rel, root+"/") }

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

// violations lists every import in imports (package directory → imported
// paths) that one of rules refuses.
func violations(imports map[string][]string, rules []rule) []string {
	var out []string
	for dir, imps := range imports {
		for _, imp := range imps {
			rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if rel == dir {
				continue // an external test package importing its own package
			}
			for _, r := range rules {
				if r.from(dir) && r.refuses(rel) {
					out = append(out, dir+" imports "+imp+": "+r.name)
				}
			}
		}
	}
	return out
}

func TestImportDirection(t *testing.T) {
	for _, v := range violations(projectImports(t, moduleRoot(t)), rules) {
		t.Error(v)
	}
}

// Every rule catches a violation planted for it, and passes the imports
// it allows: a rule that could not fail would guard nothing.
func TestEveryRuleCatchesAPlantedViolation(t *testing.T) {
	type imp struct{ dir, pkg string } // dir imports pkg
	planted := map[string][]imp{
		rules[0].name: {{"ec", "cluster"}, {"transport", "server"}},
		rules[1].name: {{"server", "tests"}, {"cluster", "cmd/memgest"}},
		rules[2].name: {{"scheme/stripe", "server"}, {"scheme/rep", "cluster/control"}},
		rules[3].name: {{"server/core", "scheme/rep"}, {"server/core", "scheme/stripe"}, {"server/core", "scheme/hybrid"}},
		rules[4].name: {{"server/core", "server/repair"}, {"server/core", "server"}, {"server/repair", "server"},
			{"server/repair", "server/commands"}, {"server/commands", "server/repair"}, {"server/core", "server/commands"}},
		rules[5].name: {{"cmd/memgest", "internal/simcluster"}},
		rules[6].name: {{"reliability", "scheme"}, {"reliability", "internal/bigcopy"}},
	}
	allowed := map[string][]imp{
		rules[0].name: {{"store", "internal/bigcopy"}},
		rules[1].name: {{"server", "store"}},
		rules[2].name: {{"scheme/rep", "cluster"}, {"scheme/split", "scheme/kind"}},
		rules[3].name: {{"server/core", "scheme/kind"}, {"server/core", "scheme"}, {"server", "scheme/stripe"}},
		rules[4].name: {{"server/core", "server/peer"}, {"server/repair", "server/core"}, {"server/commands", "server/core"},
			{"server", "server/repair"}, {"server", "server/commands"}},
		rules[5].name: {{"cmd/memgest", "server"}},
		rules[6].name: {{"scheme", "reliability"}, {"cmd/memgest", "reliability"}},
	}
	for _, r := range rules {
		if len(planted[r.name]) == 0 || len(allowed[r.name]) == 0 {
			t.Errorf("rule %q has no planted violation or no allowed import", r.name)
		}
		for _, bad := range planted[r.name] {
			if got := violations(map[string][]string{bad.dir: {module + "/" + bad.pkg}}, []rule{r}); len(got) != 1 {
				t.Errorf("rule %q: %s importing %s gave %v, want one violation", r.name, bad.dir, bad.pkg, got)
			}
		}
		for _, good := range allowed[r.name] {
			if got := violations(map[string][]string{good.dir: {module + "/" + good.pkg}}, []rule{r}); len(got) != 0 {
				t.Errorf("rule %q refuses %s importing %s: %v", r.name, good.dir, good.pkg, got)
			}
		}
	}
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
