package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// subjects.md is the contract for clients in other languages; wire.go is
// where the Go code takes it from. TestSubjectsMatchWire keeps the two
// equal: every constant of wire.go is documented in Go and appears in
// subjects.md, every subject, header and bucket subjects.md names is a
// constant, and the error-code table lists exactly toolkit's codes.

const subjectsFile = "../../subjects.md"

// constant is one constant of a Go file with its value as written.
type constant struct {
	name, value string
	documented  bool
}

// fileConstants parses a Go file's constants; references to toolkit's
// constants are resolved in toolkit's sources.
func fileConstants(t *testing.T, path string, resolve func(sel string) string) []constant {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []constant
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				c := constant{name: n.Name, documented: vs.Doc != nil || gd.Doc != nil && !gd.Lparen.IsValid()}
				if len(vs.Values) == 0 {
					out = append(out, c) // iota
					continue
				}
				switch v := vs.Values[min(i, len(vs.Values)-1)].(type) {
				case *ast.BasicLit:
					if v.Kind == token.STRING {
						c.value, _ = strconv.Unquote(v.Value)
					} else {
						c.value = v.Value
					}
				case *ast.SelectorExpr:
					if resolve != nil {
						c.value = resolve(v.Sel.Name)
					}
				}
				out = append(out, c)
			}
		}
	}
	return out
}

func toolkitConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../toolkit/*.go")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, c := range fileConstants(t, f, nil) {
			m[c.name] = c.value
		}
	}
	return m
}

func TestSubjectsMatchWire(t *testing.T) {
	mdBytes, err := os.ReadFile(subjectsFile)
	if err != nil {
		t.Fatal(err)
	}
	md := string(mdBytes)
	tk := toolkitConstants(t)
	consts := fileConstants(t, "wire.go", func(sel string) string { return tk[sel] })
	if len(consts) < 20 {
		t.Fatalf("only %d constants read from wire.go", len(consts))
	}
	var values []string
	for _, c := range consts {
		if !c.documented {
			t.Errorf("wire.go: %s has no doc comment", c.name)
		}
		if c.value == "" {
			t.Errorf("wire.go: %s: value not read", c.name)
			continue
		}
		values = append(values, c.value)
		if _, err := strconv.Atoi(c.value); err == nil {
			if !regexp.MustCompile(`\b` + c.value + `\b`).MatchString(md) {
				t.Errorf("subjects.md never mentions %s (%s)", c.value, c.name)
			}
			continue
		}
		if !strings.Contains(md, "`"+c.value) {
			t.Errorf("subjects.md does not document %s = %q (as `%s…`)", c.name, c.value, c.value)
		}
	}

	// Every subject, header and bucket subjects.md names is a constant.
	documented := func(v string) bool {
		return slices.ContainsFunc(values, func(c string) bool {
			return c == v || strings.HasSuffix(c, ".") && strings.HasPrefix(v, c)
		})
	}
	names := regexp.MustCompile("`((tools\\.[A-Za-z0-9_.<>*-]+)|(Toolbus-[A-Za-z-]+)|(toolbus_[a-z_]+))")
	for _, m := range names.FindAllStringSubmatch(md, -1) {
		name := m[1]
		if !documented(name) {
			t.Errorf("subjects.md names `%s`, which is no constant of wire.go", name)
		}
	}

	// The error-code table lists exactly toolkit's codes.
	var codes []string
	for name, v := range tk {
		if strings.HasPrefix(name, "Code") && name != "Code" {
			codes = append(codes, v)
		}
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (error|denied|interrupted) \\|").FindAllStringSubmatch(md, -1)
	var table []string
	for _, r := range rows {
		table = append(table, r[1])
	}
	slices.Sort(codes)
	slices.Sort(table)
	if !slices.Equal(codes, table) {
		t.Errorf("subjects.md's code table lists %v; toolkit's codes are %v", table, codes)
	}
}
