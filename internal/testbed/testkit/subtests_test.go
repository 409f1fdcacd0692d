package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSubtestHelpersUseTheSubtestsT guards the module's own tests (all build
// tags): a helper closure declared in a TestXxx body that calls t.Fatal (or
// FailNow, Skip…) on the test's t must not be called from inside a t.Run
// body. There it stops the parent from the subtest's goroutine: the failure
// is reported under the parent's name and the subtest dies with "subtest may
// have called FailNow on a parent test". Such a helper takes the subtest's t
// as a parameter instead.
func TestSubtestHelpersUseTheSubtestsT(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, bad := range parentStops(fset, f) {
			t.Errorf("%s", bad)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked %d test files from %s; want the whole module", files, root)
	}
}

// parentStops reports every call, inside a t.Run body of a test function,
// of a closure that stops the test function's own t.
func parentStops(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		tname := testingTParam(fd.Type)
		if tname == "" {
			continue
		}
		stoppers := map[string]token.Pos{}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if fl, ok := n.(*ast.FuncLit); ok && declares(fl, tname) {
				return false // a subtest body: its closures use the subtest's t
			}
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			id, ok := as.Lhs[0].(*ast.Ident)
			fl, isLit := as.Rhs[0].(*ast.FuncLit)
			if ok && isLit && !declares(fl, tname) && stops(fl.Body, tname) {
				stoppers[id.Name] = as.Pos()
			}
			return true
		})
		if len(stoppers) == 0 {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			body := runBody(n, tname)
			if body == nil {
				return true
			}
			ast.Inspect(body, func(m ast.Node) bool {
				if c, ok := m.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok {
						if pos, bad := stoppers[id.Name]; bad {
							out = append(out, fset.Position(c.Pos()).String()+": "+fd.Name.Name+": "+id.Name+
								" (line "+strconv.Itoa(fset.Position(pos).Line)+") calls "+tname+".Fatal on the parent test from a subtest; pass the subtest's t to it")
						}
					}
				}
				return true
			})
			return true
		})
	}
	return out
}

// testingTParam is the name of a function's single *testing.T parameter,
// or "".
func testingTParam(ft *ast.FuncType) string {
	if ft.Params == nil || len(ft.Params.List) != 1 || len(ft.Params.List[0].Names) != 1 {
		return ""
	}
	se, ok := ft.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	if sel, ok := se.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "T" {
		return ft.Params.List[0].Names[0].Name
	}
	return ""
}

// declares reports whether fl has a parameter named t (it shadows the
// test's t).
func declares(fl *ast.FuncLit, t string) bool {
	for _, f := range fl.Type.Params.List {
		for _, n := range f.Names {
			if n.Name == t {
				return true
			}
		}
	}
	return false
}

// stops reports whether b calls a method of t that ends the test.
func stops(b *ast.BlockStmt, t string) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		if fl, ok := n.(*ast.FuncLit); ok && declares(fl, t) {
			return false
		}
		if ce, ok := n.(*ast.CallExpr); ok {
			if se, ok := ce.Fun.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok && id.Name == t {
					switch se.Sel.Name {
					case "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow":
						found = true
					}
				}
			}
		}
		return true
	})
	return found
}

// runBody returns the body of n when n is t.Run(name, func(...) {...}).
func runBody(n ast.Node, t string) *ast.BlockStmt {
	ce, ok := n.(*ast.CallExpr)
	if !ok || len(ce.Args) != 2 {
		return nil
	}
	se, ok := ce.Fun.(*ast.SelectorExpr)
	if !ok || se.Sel.Name != "Run" {
		return nil
	}
	if x, ok := se.X.(*ast.Ident); !ok || x.Name != t {
		return nil
	}
	if fl, ok := ce.Args[1].(*ast.FuncLit); ok {
		return fl.Body
	}
	return nil
}
