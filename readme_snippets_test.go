//go:build snippets

package throttle_test

// Run by .ci/run as a step of its own (bash .ci/readme.sh snippets), not
// with the unit tests: one go vet over every module and the snippets
// compiles the OpenAI and Anthropic SDKs, minutes on a cold cache, which the
// root package's tests must not wait for. doc_snippets_test.go compiles the
// code blocks of the doc comments with the same machinery.

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The Go snippets of the repository's Markdown files must compile. Every
// fenced block opened with ```go is compiled, each in a package of its own,
// by one `go vet` over all of them in a scratch module joined to the
// repository's workspace, so the snippets build against this checkout and
// every module's dependencies. The convention a snippet follows:
//
//   - A snippet made only of declarations (func, type, var, const, import)
//     is a file; any other is the body of `func _() error`, so it may
//     `return err`, and the names its top-level statements declare count as
//     used (the test adds `_ = name` after each).
//   - A snippet names no imports: those of the packages it uses are added
//     from snippetImports. An import a snippet does declare but not use is
//     made blank, so that a block showing the import line checks its path.
//   - A snippet that opens with a package clause is a whole program (the
//     program of README.md): it is compiled as it is, in a package of its
//     own, with its own imports and without the prelude below.
//   - Names of the reader's own program (ctx, jobs, call, callTheAPI, api,
//     baseURL, apiKeyID, estimate, usage, logger, otelObs, rdb, b, lim, est,
//     job, errTooBusy, schedule) are declared by
//     snippetPrelude; a snippet may use them as they are.
//
// Errors are reported at the Markdown file's lines.

// snippetImports maps the package names snippets use to their paths.
var snippetImports = map[string]string{
	"throttle":     "github.com/throttlekit/throttle",
	"throttletest": "github.com/throttlekit/throttle/throttletest",
	"httpthrottle": "github.com/throttlekit/throttle/httpthrottle",
	"auto":         "github.com/throttlekit/throttle/httpthrottle/auto",
	"llm":          "github.com/throttlekit/throttle/httpthrottle/llm",
	"slogthrottle": "github.com/throttlekit/throttle/slogthrottle",
	"statuspage":   "github.com/throttlekit/throttle/statuspage",
	"htb":          "github.com/throttlekit/throttle/htb",
	"trtcm":        "github.com/throttlekit/throttle/trtcm",
	"redisbucket":  "github.com/throttlekit/throttle/redisbucket",
	"otelthrottle": "github.com/throttlekit/throttle/otelthrottle",
	"tiktoken":     "github.com/throttlekit/throttle/tiktoken",
	"grpcthrottle": "github.com/throttlekit/throttle/grpcthrottle",
	"budget":       "github.com/throttlekit/throttle/budget",
	"hoststore":    "github.com/throttlekit/throttle/hoststore",
	"pool":         "github.com/throttlekit/throttle/pool",
	"grpc":         "google.golang.org/grpc",
	"insecure":     "google.golang.org/grpc/credentials/insecure",
	"clockwork":    "github.com/jonboulle/clockwork",
	"openai":       "github.com/openai/openai-go/v3",
	"option":       "github.com/openai/openai-go/v3/option",
	"anthropic":    "github.com/anthropics/anthropic-sdk-go/v2",
	"aoption":      "github.com/anthropics/anthropic-sdk-go/v2/option",
	"genai":        "google.golang.org/genai",
	"github":       "github.com/google/go-github/v93/github",
	"redis":        "github.com/redis/go-redis/v9",
	"otel":         "go.opentelemetry.io/otel",
	"context":      "context",
	"errors":       "errors",
	"fmt":          "fmt",
	"http":         "net/http",
	"io":           "io",
	"log":          "log",
	"os":           "os",
	"slog":         "log/slog",
	"strings":      "strings",
	"sync":         "sync",
	"time":         "time",
}

// snippetPrelude stands for the reader's program around the snippets.
const snippetPrelude = `
import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
)

var (
	rdb      *redis.Client
	ctx      = context.Background()
	jobs     []string
	api      http.Handler
	baseURL  string
	apiKeyID string
	estimate int64
	usage    struct{ TotalTokens int64 }
	logger   *slog.Logger
	otelObs  throttle.Observer
	b        *throttle.Bucket
	lim      *throttle.Limiter
	est      int64
	job      string

	errTooBusy = errors.New("too busy")
)

func schedule(job string, after time.Duration) {}

func call(job string) {}

type apiResponse struct {
	Text  string
	Usage struct{ PromptTokens, CompletionTokens int64 }
}

func callTheAPI(ctx context.Context, prompt string, maxTokens int64) (apiResponse, error) {
	return apiResponse{}, nil
}
`

// snippet is one fenced Go block: its file and the line of its first line.
type snippet struct {
	file string // its path, as the line directives give it
	line int
	code string
}

func TestMarkdownSnippetsCompile(t *testing.T) {
	root, uses := workspace(t)
	var snips []snippet
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
		// Absolute, so that the line directives name the file itself.
		s, err := extractSnippets(path, path)
		snips = append(snips, s...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(snips) < 10 {
		t.Fatalf("found %d Go snippets in the Markdown files, README.md alone has more", len(snips))
	}
	if out, err := vetSnippets(t, uses, snips); err != nil {
		t.Fatalf("Markdown Go snippets do not compile (see the convention in readme_test.go):\n%s",
			strings.ReplaceAll(out, root+string(filepath.Separator), ""))
	}
	t.Logf("%d snippets compile", len(snips))
}

// TestMarkdownSnippetsCheckFails makes sure the check above can fail, at
// the right line: a snippet naming an undefined package value, one with a
// short variable declaration outside a function, as README.md once had, and
// a whole program using a name of the prelude, which a program does not get.
func TestMarkdownSnippetsCheckFails(t *testing.T) {
	_, uses := workspace(t)
	bad := []snippet{
		{file: "BAD.md", line: 10, code: "lim, _ := throttle.NewLimiter()\nh := httpthrottle.WithCost(llm.Cost)\n"},
		{file: "BAD.md", line: 20, code: "rpm, _ := throttle.New(1, throttle.Per(1, time.Second))\n\nfunc f() {}\n"},
		{file: "GOOD.md", line: 30, code: "b, err := throttle.New(1, throttle.Per(1, time.Second))\nif err != nil {\n\treturn err\n}\n"},
		{file: "BAD.md", line: 40, code: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(ctx)\n}\n"},
		{file: "GOOD.md", line: 50, code: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"ok\")\n}\n"},
	}
	out, err := vetSnippets(t, uses, bad)
	if err == nil {
		t.Fatal("go vet passed snippets that do not compile")
	}
	for _, want := range []string{"BAD.md:11", "undefined: llm", "BAD.md:22", "BAD.md:45"} {
		if !strings.Contains(out, want) {
			t.Errorf("go vet output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "GOOD.md") {
		t.Errorf("a good snippet was reported:\n%s", out)
	}
}

// extractSnippets returns the ```go blocks of a Markdown file.
func extractSnippets(path, name string) ([]snippet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []snippet
	var cur *snippet
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.TrimSpace(line)
		switch {
		case cur == nil && fence == "```go":
			cur = &snippet{file: name, line: n + 1}
		case cur != nil && fence == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unterminated ```go block", name, cur.line-1)
	}
	return out, sc.Err()
}

// vetSnippets writes each snippet as a package of a scratch module joined
// to the workspace uses, and runs one go vet over them all.
func vetSnippets(t *testing.T, uses []string, snips []snippet) (string, error) {
	t.Helper()
	dir := t.TempDir()
	work := "go 1.26.0\n\nuse (\n\t./snippets\n"
	for _, u := range uses {
		work += "\t" + strconv.Quote(u) + "\n"
	}
	work += ")\n"
	write(t, filepath.Join(dir, "go.work"), work)
	mod := filepath.Join(dir, "snippets")
	write(t, filepath.Join(mod, "go.mod"), "module snippets\n\ngo 1.26.0\n")
	for i, s := range snips {
		pkg := fmt.Sprintf("s%02d", i)
		if isProgram(s.code) {
			write(t, filepath.Join(mod, pkg, "main.go"), fmt.Sprintf("//line %s:%d\n", s.file, s.line)+s.code)
			continue
		}
		write(t, filepath.Join(mod, pkg, "prelude.go"), "package "+pkg+"\n"+snippetPrelude)
		write(t, filepath.Join(mod, pkg, "snippet.go"), wrapSnippet(pkg, s))
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// isProgram reports whether a snippet opens with a package clause: a whole
// program, compiled as it is.
func isProgram(code string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", code, parser.PackageClauseOnly)
	return err == nil
}

// wrapSnippet returns the Go file of package pkg for s, per the convention
// above. A snippet that parses neither as a file nor as a function body is
// written as a body, for the compiler to report at its line.
func wrapSnippet(pkg string, s snippet) string {
	directive := fmt.Sprintf("//line %s:%d\n", s.file, s.line)
	prefix := "package " + pkg + "\n"
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", prefix+s.code, 0); err == nil {
		// A file: blank the imports it declares but does not use, and add
		// those of the packages it uses without declaring.
		used := selectorPackages(f)
		code := s.code
		for i := len(f.Imports) - 1; i >= 0; i-- {
			im := f.Imports[i]
			name := importName(im)
			if im.Name == nil && !slices.Contains(used, name) {
				at := fset.Position(im.Path.Pos()).Offset - len(prefix)
				code = code[:at] + "_ " + code[at:]
			}
			used = slices.DeleteFunc(used, func(u string) bool { return u == name })
		}
		return prefix + importLines(used) + directive + code
	}
	open := prefix + "func _() error {\n"
	code := s.code
	if f, err := parser.ParseFile(fset, "", open+code+"}\n", 0); err == nil {
		fn := f.Decls[0].(*ast.FuncDecl)
		// After each top-level statement that declares names, on its last
		// line so that the snippet's lines keep their numbers, use them.
		start := fset.File(f.Pos()).Base() + len(open)
		for i := len(fn.Body.List) - 1; i >= 0; i-- {
			st := fn.Body.List[i]
			if names := declared(st); len(names) > 0 {
				at := int(st.End()) - start
				blanks := strings.TrimSuffix(strings.Repeat("_, ", len(names)), ", ")
				code = code[:at] + "; " + blanks + " = " + strings.Join(names, ", ") + code[at:]
			}
		}
		if len(fn.Body.List) == 0 {
			code += "return nil\n"
		} else if _, ok := fn.Body.List[len(fn.Body.List)-1].(*ast.ReturnStmt); !ok {
			code += "return nil\n"
		}
		open = prefix + importLines(selectorPackages(f)) + "func _() error {\n"
	}
	return open + directive + code + "}\n"
}

// importLines imports the packages of snippetImports named.
func importLines(names []string) string {
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "import %s %q\n", name, snippetImports[name])
	}
	return b.String()
}

// declared returns the names a statement declares in its block, but _.
func declared(st ast.Stmt) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE {
			for _, e := range st.Lhs {
				if id, ok := e.(*ast.Ident); ok {
					add(id)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
			for _, spec := range g.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					add(id)
				}
			}
		}
	}
	return names
}

// selectorPackages returns the known package names f uses as x in x.Sel
// without declaring x itself.
func selectorPackages(f *ast.File) []string {
	if f == nil {
		return nil
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		// Obj is nil for a name the snippet does not declare.
		if ok && id.Obj == nil && snippetImports[id.Name] != "" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
		return true
	})
	slices.Sort(names)
	return names
}

func importName(im *ast.ImportSpec) string {
	if im.Name != nil {
		return im.Name.Name
	}
	p := strings.Trim(im.Path.Value, `"`)
	for name, path := range snippetImports {
		if path == p {
			return name
		}
	}
	return p[strings.LastIndex(p, "/")+1:]
}
