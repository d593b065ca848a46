//go:build ignore

package main

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := os.Args[1]
	withTests := len(os.Args) > 2 && os.Args[2] == "tests"
	fset := token.NewFileSet()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, m := range matches {
		if !withTests && strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, parser.ParseComments)
		if err != nil {
			panic(err)
		}
		if f.Name.Name != "server" {
			continue
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(err error) { fmt.Fprintln(os.Stderr, err) }}
	pkg, _ := conf.Check("github.com/memgest/memgest/server", fset, files, info)
	// field -> owner name
	owner := map[*types.Var]string{}
	var walk func(prefix string, t types.Type)
	walk = func(prefix string, t types.Type) {
		st, ok := t.(*types.Struct)
		if !ok {
			return
		}
		for i := 0; i < st.NumFields(); i++ {
			f := st.Field(i)
			owner[f] = prefix + "." + f.Name()
			walk(prefix+"."+f.Name(), f.Type())
		}
	}
	for _, name := range pkg.Scope().Names() {
		if tn, ok := pkg.Scope().Lookup(name).(*types.TypeName); ok {
			walk(name, tn.Type().Underlying())
		}
	}
	name := func(o types.Object) (string, string) {
		switch o := o.(type) {
		case *types.Func:
			sig := o.Type().(*types.Signature)
			if r := sig.Recv(); r != nil {
				t := r.Type()
				if p, ok := t.(*types.Pointer); ok {
					t = p.Elem()
				}
				if n, ok := t.(*types.Named); ok {
					return n.Obj().Name() + "." + o.Name(), "method"
				}
				return "iface." + o.Name(), "imethod"
			}
			if o.Parent() == pkg.Scope() {
				return o.Name(), "func"
			}
		case *types.Var:
			if o.IsField() {
				if s, ok := owner[o]; ok {
					return s, "field"
				}
				return "?." + o.Name(), "field"
			}
			if o.Parent() == pkg.Scope() {
				return o.Name(), "var"
			}
		case *types.Const:
			if o.Parent() == pkg.Scope() {
				return o.Name(), "const"
			}
		case *types.TypeName:
			if o.Parent() == pkg.Scope() {
				return o.Name(), "type"
			}
		}
		return "", ""
	}

	// top-level declarations with spans
	type span struct {
		file, name, kind string
		pos, end         token.Pos
		lines            int
	}
	var spans []span
	declName := func(d ast.Decl, f *ast.File) []span {
		var out []span
		switch d := d.(type) {
		case *ast.FuncDecl:
			o := info.Defs[d.Name]
			n, k := name(o)
			if d.Name.Name == "init" {
				n, k = "init@"+filepath.Base(fset.Position(d.Pos()).Filename), "init"
			}
			p := d.Pos()
			if d.Doc != nil {
				p = d.Doc.Pos()
			}
			out = append(out, span{name: n, kind: k, pos: p, end: d.End()})
		case *ast.GenDecl:
			for i, s := range d.Specs {
				var id *ast.Ident
				switch s := s.(type) {
				case *ast.TypeSpec:
					id = s.Name
				case *ast.ValueSpec:
					id = s.Names[0]
				default:
					continue
				}
				o := info.Defs[id]
				n, k := name(o)
				if n == "" {
					n, k = "_"+id.Name, "blank"
				}
				p, e := s.Pos(), s.End()
				if len(d.Specs) == 1 {
					p, e = d.Pos(), d.End()
					if d.Doc != nil {
						p = d.Doc.Pos()
					}
				} else {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Doc != nil {
							p = s.Doc.Pos()
						}
					case *ast.ValueSpec:
						if s.Doc != nil {
							p = s.Doc.Pos()
						}
					}
					if i == 0 {
						p = d.Pos()
						if d.Doc != nil {
							p = d.Doc.Pos()
						}
					}
					if i == len(d.Specs)-1 {
						e = d.End()
					}
				}
				out = append(out, span{name: n, kind: k, pos: p, end: e})
			}
		}
		for i := range out {
			out[i].file = filepath.Base(fset.Position(out[i].pos).Filename)
			out[i].lines = fset.Position(out[i].end).Line - fset.Position(out[i].pos).Line + 1
		}
		return out
	}
	for _, f := range files {
		for _, d := range f.Decls {
			spans = append(spans, declName(d, f)...)
		}
	}
	enclosing := func(p token.Pos) string {
		for _, s := range spans {
			if s.pos <= p && p < s.end {
				return s.name
			}
		}
		return "?"
	}
	df, _ := os.Create(os.Args[len(os.Args)-1] + ".decls")
	for _, s := range spans {
		fmt.Fprintf(df, "%s\t%s\t%s\t%d\t%d\n", s.file, s.name, s.kind, fset.Position(s.pos).Line, s.lines)
	}
	df.Close()
	type key struct{ use, udecl, def, name, kind string }
	counts := map[key]int{}
	for id, o := range info.Uses {
		if o.Pkg() != pkg {
			continue
		}
		n, k := name(o)
		if n == "" {
			continue
		}
		u := filepath.Base(fset.Position(id.Pos()).Filename)
		d := filepath.Base(fset.Position(o.Pos()).Filename)
		counts[key{u, enclosing(id.Pos()), d, n, k}]++
	}
	var keys []key
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.use != b.use {
			return a.use < b.use
		}
		if a.udecl != b.udecl {
			return a.udecl < b.udecl
		}
		return a.name < b.name
	})
	for _, k := range keys {
		fmt.Printf("%s\t%s\t%s\t%s\t%s\t%d\n", k.use, k.udecl, k.def, k.name, k.kind, counts[k])
	}
}
