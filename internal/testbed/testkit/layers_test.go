package testkit

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The three levels of internal/ that docs/ARCHITECTURE.md names ("Imports
// point down"): the application, the small libraries below proxy and pool,
// and the test equipment.
const (
	levelApp     = "internal/app"
	levelLib     = "internal/lib"
	levelTestbed = "internal/testbed"
)

// TestImportsPointDown guards the layering rule of docs/ARCHITECTURE.md over
// the module's non-test Go files of every OS and build tag (imports read with
// go/parser, so a file another GOOS or a tagged suite builds counts too):
// every package under internal/ sits in one of the three levels; the
// libraries of internal/lib import nothing of the module outside that level;
// no package but cmd/ and the application itself reaches internal/app, not
// even through another package (proxy and pool build on their own, and a
// test of proxy or pool may use the test equipment without an import cycle
// through the application); and nothing but the test equipment links
// internal/testbed, so no product binary carries it. A test file may import
// what it likes: its package's tests are not part of the graph the products
// are built from.
func TestImportsPointDown(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	module := modulePath(t, root)
	graph := importGraph(t, root, module)
	if len(graph) < 40 {
		t.Fatalf("read %d packages from %s; want the whole module", len(graph), root)
	}

	t.Run("every-internal-package-in-a-level", func(t *testing.T) {
		for _, pkg := range sortedKeys(graph) {
			if strings.HasPrefix(pkg, "internal/") && !under(pkg, levelApp) && !under(pkg, levelLib) && !under(pkg, levelTestbed) {
				t.Errorf("%s is in no level: move it under %s, %s or %s", pkg, levelApp, levelLib, levelTestbed)
			}
		}
	})

	t.Run("libraries-import-only-libraries", func(t *testing.T) {
		for _, pkg := range sortedKeys(graph) {
			if !under(pkg, levelLib) {
				continue
			}
			for _, imp := range graph[pkg] {
				if !under(imp, levelLib) {
					t.Errorf("%s imports %s; a library below proxy and pool imports only other libraries", pkg, imp)
				}
			}
		}
	})

	t.Run("nothing-below-reaches-the-application", func(t *testing.T) {
		for _, pkg := range sortedKeys(graph) {
			if under(pkg, levelApp) || under(pkg, "cmd") {
				continue
			}
			if chain := reaches(graph, pkg, levelApp); chain != nil {
				t.Errorf("%s reaches the application: %s", pkg, strings.Join(chain, " -> "))
			}
		}
	})

	t.Run("products-never-link-the-test-equipment", func(t *testing.T) {
		for _, pkg := range sortedKeys(graph) {
			if under(pkg, levelTestbed) {
				continue
			}
			if chain := reaches(graph, pkg, levelTestbed); chain != nil {
				t.Errorf("%s links test equipment: %s", pkg, strings.Join(chain, " -> "))
			}
		}
	})
}

// under reports whether the package path (relative to the module) is dir or
// a package below it.
func under(pkg, dir string) bool {
	return pkg == dir || strings.HasPrefix(pkg, dir+"/")
}

// modulePath reads the module line of root's go.mod.
func modulePath(t *testing.T, root string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("%s/go.mod names no module", root)
	return ""
}

// importGraph maps each package directory of the module (slash-separated,
// relative to root) to the module's packages its non-test files import,
// relative the same way. Nested modules (bench), testdata and hidden
// directories are not part of it.
func importGraph(t *testing.T, root, module string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	sets := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if sets[pkg] == nil {
			sets[pkg] = map[string]bool{}
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				sets[pkg][path.Clean(rest)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	graph := make(map[string][]string, len(sets))
	for pkg, imps := range sets {
		graph[pkg] = sortedKeys(imps)
	}
	return graph
}

// reaches returns the shortest import chain from pkg to a package under dir,
// or nil when there is none.
func reaches(graph map[string][]string, pkg, dir string) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range graph[cur] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = cur
			if under(imp, dir) {
				chain := []string{imp}
				for at := cur; at != ""; at = prev[at] {
					chain = append([]string{at}, chain...)
				}
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

// sortedKeys returns m's keys in order, so failures read the same each run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
