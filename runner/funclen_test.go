package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be, from its func keyword to its closing brace
// (issue 18: split by meaning past it).
const maxFuncLines = 150

// funcLenDirs are the packages TestFuncLength checks, relative to runner/.
var funcLenDirs = []string{
	".",               // runner
	"../cmd/lockstep", // the command
	"../scenario",     // scenario resolution
}

// TestFuncLength fails naming every function (or method) of the non-test .go files of
// funcLenDirs longer than maxFuncLines lines.
func TestFuncLength(t *testing.T) {
	for _, dir := range funcLenDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no .go files", dir)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
				if n := to.Line - from.Line + 1; n > maxFuncLines {
					fn := fd.Name.Name
					if fd.Recv != nil && len(fd.Recv.List) > 0 {
						fn = recvName(fd.Recv.List[0].Type) + "." + fn
					}
					t.Errorf("%s:%d: %s is %d lines, over %d: split it by meaning", name, from.Line, fn, n, maxFuncLines)
				}
			}
		}
	}
}

// recvName returns the type name of a method's receiver type expression (T, *T, T[P]).
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
