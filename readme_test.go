package throttle_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// A path in code quotes: a directory and a file with an extension.
	mdPath = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:md|go|csv|golden|sh))`")
)

// TestMarkdownLinksResolve checks that every relative link of the
// repository's Markdown files, and every file path quoted in code, names a
// file that exists (relative to the Markdown file or to the root), and that
// a link's #fragment names a heading of the Markdown file it points to.
func TestMarkdownLinksResolve(t *testing.T) {
	root, _ := workspace(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			full := path
			if file != "" {
				full = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s: link %s: no such file", rel, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(full, ".md") && !slices.Contains(headingAnchors(t, full), frag) {
				t.Errorf("%s: link %s: no such heading", rel, target)
			}
		}
		for _, m := range mdPath.FindAllStringSubmatch(string(text), -1) {
			_, errDir := os.Stat(filepath.Join(filepath.Dir(path), m[1]))
			_, errRoot := os.Stat(filepath.Join(root, m[1]))
			if errDir != nil && errRoot != nil {
				t.Errorf("%s: names %s, which does not exist", rel, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var anchors []string
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

// TestMarkdownReadmeProgram checks that the program README.md shows is
// Example_readme of example_readme_test.go, which go test runs and whose
// output it checks: the same imports, a func main whose body is the
// example's up to its "// Output:" comment, and the output README.md shows
// in the fenced block after the program the example's.
func TestMarkdownReadmeProgram(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(text)
	const open = "```go\npackage main\n"
	at := strings.Index(readme, open)
	if at < 0 {
		t.Fatal("README.md shows no program: no ```go block opening with package main")
	}
	rest := readme[at+len("```go\n"):]
	end := strings.Index(rest, "\n```\n")
	if end < 0 {
		t.Fatal("README.md: the program's block is not closed")
	}
	program := rest[:end+1]
	// The output: the next fenced block after the program's.
	rest = rest[end+len("\n```\n"):]
	var shown []string
	fenced := false
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "```") {
			if fenced {
				break
			}
			fenced = true
			continue
		}
		if fenced {
			shown = append(shown, line)
		}
	}

	mainImports, mainBody := funcBody(t, "README.md's program", program, "main")
	src, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	exImports, exBody := funcBody(t, "example_readme_test.go", string(src), "Example_readme")
	body, out, ok := strings.Cut(exBody, "\t// Output:\n")
	if !ok {
		t.Fatal("Example_readme has no // Output: comment")
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		want = append(want, strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(line), "//"), " "))
	}

	if !slices.Equal(mainImports, exImports) {
		t.Errorf("README.md's program imports %q, Example_readme's file %q", mainImports, exImports)
	}
	if mainBody != body {
		t.Errorf("README.md's func main is not Example_readme's body:\n--- README.md\n%s--- example_readme_test.go\n%s", mainBody, body)
	}
	if !slices.Equal(shown, want) {
		t.Errorf("README.md shows the output\n%s\nExample_readme's is\n%s", strings.Join(shown, "\n"), strings.Join(want, "\n"))
	}
}

// funcBody returns the import paths of the Go file src and the text of the
// body of its function name, between the braces.
func funcBody(t *testing.T, what, src, name string) (imports []string, body string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, what, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range f.Imports {
		imports = append(imports, im.Path.Value)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == name && fn.Recv == nil {
			from := fset.Position(fn.Body.Lbrace).Offset + 1
			to := fset.Position(fn.Body.Rbrace).Offset
			return imports, strings.TrimPrefix(src[from:to], "\n")
		}
	}
	t.Fatalf("%s has no func %s", what, name)
	return nil, ""
}

// TestModulesCarryTheLicense checks that every module of the workspace has
// the root's LICENSE: a module's zip holds only its own directory, and
// pkg.go.dev shows no documentation for a module without a license.
func TestModulesCarryTheLicense(t *testing.T) {
	root, uses := workspace(t)
	want, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range uses {
		got, err := os.ReadFile(filepath.Join(dir, "LICENSE"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("module %s: LICENSE missing or not the root's (%v)", dir, err)
		}
	}
}

// workspace returns the repository root and the absolute directories of
// the modules its go.work uses. It skips the test outside a checkout (in a
// module cache, the nested modules are absent).
func workspace(t *testing.T) (root string, uses []string) {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "go.work")
	if _, err := os.Stat(work); err != nil {
		t.Skip("no go.work: not a checkout of the repository")
	}
	cmd := exec.Command("go", "work", "edit", "-json", work)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var w struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatal(err)
	}
	for _, u := range w.Use {
		dir := filepath.Join(root, u.DiskPath)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			t.Skipf("module %s of go.work is absent: not a checkout of the repository", u.DiskPath)
		}
		uses = append(uses, dir)
	}
	return root, uses
}
