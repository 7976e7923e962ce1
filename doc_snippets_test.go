//go:build snippets

package throttle_test

// The code blocks of the doc comments must compile, as the Markdown
// snippets must (readme_snippets_test.go): go doc shows them to readers who
// copy them. Every non-test Go file of every module of the workspace is
// parsed (build tags ignored, testdata and dot directories skipped), and
// the code blocks (go/doc/comment's Code: indented lines) of its package
// doc and of its declarations' docs (funcs, types, vars, consts, struct
// fields and interface methods) are collected. Each block is decided on by
// the first rule that matches:
//
//  1. Marked: a block whose first line is a comment opening with
//     "// Not compiled:", followed by why, is skipped. For a snippet that
//     cannot compile as it is; the reason is shown to the reader too.
//  2. Go: a block that parses as Go after the wrapping the Markdown
//     snippets get (a program, a file of declarations, or the body of a
//     function) is compiled, by the same machinery and convention (the
//     prelude's names, imports added from snippetImports).
//  3. Go that does not parse: a block with a line holding ":=", a line
//     opening with a keyword that starts a Go statement or declaration
//     (func, if, for, switch, select, return, var, const, type, import,
//     package, defer) or a call of an exported function of a package of
//     snippetImports (throttle.New(...)) is compiled all the same, so that
//     the compiler reports its syntax error at its line: an elided line
//     ("...") or a typo must not turn Go into prose.
//  4. Anything else is skipped as not Go: shell commands (every line opens
//     with "$ ", "go " or "throttle ", the repository's commands), and
//     text: program output, tables of metrics, usage lines, diagrams.
//
// Rule 3 errs on the side of compiling: a block of output that happens to
// open a line with "for " fails, and is then reworded or marked.
//
// Errors are reported at the Go file's lines; -v logs how many blocks were
// compiled and skipped, and each skipped block with its reason.

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docNotCompiled opens the first line of a block the check skips.
const docNotCompiled = "// Not compiled:"

var (
	goKeywordLine = regexp.MustCompile(`(?m)^\s*(func|if|for|switch|select|return|var|const|type|import|package|defer)[ (]`)
	goPackageCall = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Z][A-Za-z0-9_]*\(`)
	shellLine     = regexp.MustCompile(`^(\$ |go |throttle )`)
)

// docBlock is one code block of a doc comment, and what the check makes of
// it: compiled when skip is empty, else skipped for that reason.
type docBlock struct {
	snippet
	skip string
}

func TestDocSnippetsCompile(t *testing.T) {
	root, uses := workspace(t)
	var blocks []docBlock
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := extractDocBlocks(path, path)
		blocks = append(blocks, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var snips []snippet
	for _, b := range blocks {
		if b.skip == "" {
			snips = append(snips, b.snippet)
			continue
		}
		rel, _ := filepath.Rel(root, b.file)
		first, _, _ := strings.Cut(b.code, "\n")
		t.Logf("skipped %s:%d (%s): %s", rel, b.line, b.skip, first)
	}
	// The package doc of tiktoken holds one: a walk that finds none is broken.
	if len(snips) == 0 {
		t.Fatalf("found no Go code block in the doc comments of %d blocks", len(blocks))
	}
	t.Logf("%d doc-comment code blocks: %d Go, compiled; %d skipped", len(blocks), len(snips), len(blocks)-len(snips))
	if out, err := vetSnippets(t, uses, snips); err != nil {
		failing := failingSnippets(out, snips)
		t.Fatalf("%d of %d Go code blocks of doc comments do not compile (see the rules in doc_snippets_test.go):\n%s",
			len(failing), len(snips), strings.ReplaceAll(out, root+string(filepath.Separator), ""))
	}
}

// TestDocSnippetsCheckFails makes sure the check above can fail, at the
// right lines, and skips only what it should: a Go file whose doc comments
// hold a snippet naming an undefined function, one with an elided line, a
// good one, and blocks of shell, output, a table and a marked snippet.
func TestDocSnippetsCheckFails(t *testing.T) {
	_, uses := workspace(t)
	src := `// Package bad has doc comments with code.
//
//	lim, err := throttle.NewLimiter()
//	if err != nil {
//		return err
//	}
//	tr := throttle.NewTransport(nil, lim)
//
// Run it with
//
//	go run ./bad
//	$ throttle demo
//
// It prints
//
//	waited 1.2s for 'tokens' due to client-side throttling
package bad

// F is documented with an elided line.
//
//	enc, err := tiktoken.ForModel("gpt-4o")
//	...
//	_ = enc
func F() {}

// G is documented with good code, a table and a marked snippet.
//
//	b, err := throttle.New(1, throttle.Per(1, time.Second))
//	if err != nil {
//		return err
//	}
//	b.TryAcquire(1)
//
// Its metrics:
//
//	throttle.granted   counter  {request}
//	throttle.rejected  counter  {request}
//
// And
//
//	// Not compiled: client is the reader's.
//	client.Do(nil)
func G() {}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.go")
	write(t, path, src)
	blocks, err := extractDocBlocks(path, path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var snips []snippet
	for _, b := range blocks {
		got = append(got, strconv.Itoa(b.line)+":"+b.skip)
		if b.skip == "" {
			snips = append(snips, b.snippet)
		}
	}
	want := []string{"3:", "11:shell", "16:text", "21:", "28:", "36:text", "41:marked"}
	if !slices.Equal(got, want) {
		t.Errorf("blocks (line:skipped) = %q, want %q", got, want)
	}
	out, err := vetSnippets(t, uses, snips)
	if err == nil {
		t.Fatal("go vet passed doc snippets that do not compile")
	}
	for _, want := range []string{"bad.go:7:", "undefined: throttle.NewTransport", "bad.go:22:"} {
		if !strings.Contains(out, want) {
			t.Errorf("go vet output lacks %q:\n%s", want, out)
		}
	}
	for line := 28; line <= 32; line++ {
		if strings.Contains(out, "bad.go:"+strconv.Itoa(line)+":") {
			t.Errorf("the good snippet (lines 28-32) was reported:\n%s", out)
		}
	}
	if failing := failingSnippets(out, snips); len(failing) != 2 {
		t.Errorf("%d snippets counted as failing, want 2:\n%s", len(failing), out)
	}
}

// extractDocBlocks returns the code blocks of the doc comments of the Go
// file at path, named name in the snippets' line directives.
func extractDocBlocks(path, name string) ([]docBlock, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	docs := []*ast.CommentGroup{f.Doc}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			docs = append(docs, d.Doc)
		case *ast.GenDecl:
			docs = append(docs, d.Doc)
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					docs = append(docs, s.Doc)
				case *ast.TypeSpec:
					docs = append(docs, s.Doc)
					ast.Inspect(s.Type, func(n ast.Node) bool {
						if field, ok := n.(*ast.Field); ok {
							docs = append(docs, field.Doc)
						}
						return true
					})
				}
			}
		}
	}
	var out []docBlock
	var p comment.Parser
	for _, cg := range docs {
		if cg == nil {
			continue
		}
		lines := commentLines(fset, cg)
		from := 0
		for _, block := range p.Parse(cg.Text()).Content {
			code, ok := block.(*comment.Code)
			if !ok {
				continue
			}
			line := fset.Position(cg.Pos()).Line
			if at := findBlock(lines[from:], code.Text); at >= 0 {
				line = lines[from+at].line
				from += at + 1
			}
			out = append(out, docBlock{
				snippet: snippet{file: name, line: line, code: code.Text},
				skip:    docBlockSkip(code.Text),
			})
		}
	}
	return out, nil
}

// commentLine is one line of a comment's text, without the comment marker.
type commentLine struct {
	line int
	text string
}

func commentLines(fset *token.FileSet, cg *ast.CommentGroup) []commentLine {
	var lines []commentLine
	for _, c := range cg.List {
		line := fset.Position(c.Slash).Line
		text, ok := strings.CutPrefix(c.Text, "//")
		if !ok {
			text = strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/")
		}
		for i, l := range strings.Split(text, "\n") {
			lines = append(lines, commentLine{line + i, l})
		}
	}
	return lines
}

// findBlock returns the index in lines of the first line of the code
// block code, which go/doc/comment gives unindented, or -1.
func findBlock(lines []commentLine, code string) int {
	want := strings.Split(strings.TrimSuffix(code, "\n"), "\n")
	for i := range lines {
		if i+len(want) > len(lines) {
			break
		}
		match := true
		for j, w := range want {
			l := lines[i+j].text
			if strings.TrimSpace(l) != strings.TrimSpace(w) || w != "" && strings.TrimLeft(l, " \t") == l {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// docBlockSkip returns why a code block is not compiled, by the rules of
// this file's header, or "" for a block of Go.
func docBlockSkip(code string) string {
	if strings.HasPrefix(code, docNotCompiled) {
		return "marked"
	}
	if parsesAsGo(code) || goKeywordLine.MatchString(code) || strings.Contains(code, ":=") {
		return ""
	}
	for _, m := range goPackageCall.FindAllStringSubmatch(code, -1) {
		if snippetImports[m[1]] != "" {
			return ""
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(code), "\n") {
		if !shellLine.MatchString(l) {
			return "text"
		}
	}
	return "shell"
}

// parsesAsGo reports whether code parses as one of the snippets of the
// Markdown convention: a program, a file of declarations or a function
// body.
func parsesAsGo(code string) bool {
	fset := token.NewFileSet()
	if isProgram(code) {
		_, err := parser.ParseFile(fset, "", code, parser.SkipObjectResolution)
		return err == nil
	}
	if _, err := parser.ParseFile(fset, "", "package p\n"+code, parser.SkipObjectResolution); err == nil {
		return true
	}
	_, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}\n", parser.SkipObjectResolution)
	return err == nil
}

// vetPosition matches the position of an error in go vet's output.
var vetPosition = regexp.MustCompile(`(?m)^(?:vet: )?(\S+\.go):(\d+):`)

// failingSnippets returns the snippets go vet's output reports an error in.
func failingSnippets(out string, snips []snippet) []snippet {
	var failing []snippet
	for _, m := range vetPosition.FindAllStringSubmatch(out, -1) {
		// go vet makes a path relative to its directory when that is shorter.
		file := m[1]
		for strings.HasPrefix(file, "../") || strings.HasPrefix(file, "./") {
			file = file[strings.Index(file, "/")+1:]
		}
		line, _ := strconv.Atoi(m[2])
		for _, s := range snips {
			n := strings.Count(s.code, "\n")
			if (s.file == file || strings.HasSuffix(s.file, string(filepath.Separator)+file)) && line >= s.line && line < s.line+n+1 && !slices.Contains(failing, s) {
				failing = append(failing, s)
			}
		}
	}
	return failing
}
