package throttle_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocNamesEveryType: the package documentation of the core, of
// httpthrottle, httpthrottle/llm, htb and trtcm, a map of each, links every exported type, so that a new
// type cannot be added without a line there.
func TestDocNamesEveryType(t *testing.T) {
	for _, dir := range []string{".", "httpthrottle", "httpthrottle/llm", "htb", "trtcm"} {
		doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pkgs {
			for _, f := range p.Files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || g.Tok != token.TYPE {
						continue
					}
					for _, s := range g.Specs {
						name := s.(*ast.TypeSpec).Name.Name
						if !ast.IsExported(name) {
							continue
						}
						n++
						if !strings.Contains(string(doc), "["+name+"]") {
							t.Errorf("%s/doc.go does not link [%s]", dir, name)
						}
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no exported type found", dir)
		}
	}
}
