package throttle_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestAPISize holds the packages to the size issue 36 brought them to, so
// that a second way to do a job does not creep back unnoticed. A name is a
// top-level exported func, type, const or var, or an exported method of an
// exported type, as counted for x/time/rate's 28: interface methods and
// struct fields are not counted. The root's bound is 72, above issue 36's
// 70, for two methods of Limiter through which issue 37 has the HTTP layer
// reach any Gate instead of tables the core registered at init: Clock
// (the clock a Gate sleeps on, as redisbucket's has) and Observe (a
// server's refusal of the account, told to the observers of the limit it
// concerns). Settle, a Taker's settlement without a Permit, replaced
// Refund. Issue 41 raised it to 73 for Limiter.Explain: the explanation of
// a wait before the call, which WaitTime's duration cannot carry (the
// binding limit, the calls ahead, the pause and its cause); the
// explanation itself is WaitError's, not a type of its own. Issue 40
// raised it to 74 for EventThreshold: a budget's alert reaches the
// observers a program already has (slogthrottle, otelthrottle, the status
// page) as one more kind of Event rather than through a callback only.
// Issue 43 raised it to 75 for Keyed.Gate: a key's Gate that decides on
// the key's compact record, so that code over any Gate (the gRPC
// interceptors, the HTTP layer) keeps a server's keys compact through the
// public seam; Limiter makes the key's Limiter, several hundred bytes.
// And to 76 for Admitter, the capability of deciding and reporting every
// limit's state in one step, through which Handler decides a key on
// its compact record (one lookup of the key, not three) without the
// internal tables the core once lent it. And to 77 for Keyed.Admit, the
// same decision for a caller that holds the key rather than its Gate:
// Handler under PerKey, which would otherwise box a Gate per request
// (the one allocation of a hot key's request).
// httpthrottle's bound is 56, above issue 36's 55, for the one way a
// pool's member is sent a request (issue 39): WithRoutes, and RouteTo for
// the usual route (a base URL and a credential).
func TestAPISize(t *testing.T) {
	for dir, most := range map[string]int{".": 77, "httpthrottle": 56} {
		if n := exportedNames(t, dir); n > most {
			t.Errorf("package %s exports %d names, at most %d: fold the new one into an existing way, or raise the bound with the reason", dir, n, most)
		}
	}
}

func exportedNames(t *testing.T, dir string) int {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv.List[0].Type)) {
						n++
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								n++
							}
						case *ast.ValueSpec:
							for _, id := range s.Names {
								if id.IsExported() {
									n++
								}
							}
						}
					}
				}
			}
		}
	}
	return n
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}
