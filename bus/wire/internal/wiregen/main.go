// Command wiregen writes bus/wire/wire_gen.go: the msgpack encoder and
// decoder of every wire message, generated from the structs' msgpack tags
// so that the struct definition is the one list of a message's fields.
//
//	go generate ./bus/wire     (runs: go run ./internal/wiregen)
//
// A message is a struct in package wire marked with a //wire:message
// line; the structs its fields refer to (in wire or in toolkit) are
// generated too. Supported field types: string and named string types,
// bool, int, int64, uint64, float64, any, map[string]any, map[string]string,
// []string, and structs by value, by pointer or in a slice. A named
// string type's constants are interned when decoded. A pointer to a
// struct that holds a slice of structs is allocated together with one
// element of that slice (the usual one-block chunk). The tag
// `wire:"extra=FIELD"` on a field makes its encoder take a MetaEntry that
// is written into the referenced struct's map FIELD (the worker's
// instance in a final's metadata).
//
// TestGeneratedCodeIsFresh fails when wire_gen.go differs from what this
// command writes now.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

const genFile = "wire_gen.go"

func main() {
	out := flag.String("o", genFile, "output file")
	flag.Parse()
	root, err := moduleRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
	src, err := generate(".", filepath.Join(root, "toolkit"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
}

// kind is what the generator does with a field type.
type kind int

const (
	kString kind = iota
	kEnum        // a named string type
	kBool
	kInt
	kInt64
	kUint64
	kFloat64
	kAnyMap
	kAny // an any value: whatever appendValue writes and value reads
	kStrMap
	kStrSlice
	kStruct
	kStructPtr
	kStructSlice
)

// typ is a struct or a named string type of wire or toolkit.
type typ struct {
	pkg    string // "" for wire, else the package name (toolkit)
	name   string
	st     *ast.StructType // nil for a named string type
	fields []field
	consts []string // a named string type's constants, qualified
	done   bool
}

func (t *typ) goName() string {
	if t.pkg == "" {
		return t.name
	}
	return t.pkg + "." + t.name
}

// fn is the suffix of the type's generated functions.
func (t *typ) fn() string {
	if t.pkg == "" {
		return t.name
	}
	return strings.ToUpper(t.pkg[:1]) + t.pkg[1:] + t.name
}

type field struct {
	goName    string
	key       string
	omitempty bool
	kind      kind
	ref       *typ   // struct or enum type
	extra     string // wire:"extra=FIELD": the map field of ref that takes the extra entry
}

type generator struct {
	types    map[string]*typ // by goName
	order    []*typ          // structs in generation order
	messages []*typ
	extra    map[*typ]string // types whose encoder takes an extra entry → the map field's key
	spares   map[*typ]bool   // slice element types that can be co-allocated
	fails    map[*typ]bool   // types whose encoder can fail (they hold a map[string]any)
	coallocs map[*typ]*typ   // struct → the slice element allocated with it
}

// generate parses the wire package in dir and the toolkit package in
// toolkitDir and returns the formatted source of wire_gen.go.
func generate(dir, toolkitDir string) ([]byte, error) {
	g := &generator{types: map[string]*typ{}, extra: map[*typ]string{}, spares: map[*typ]bool{},
		fails: map[*typ]bool{}, coallocs: map[*typ]*typ{}}
	wireFiles, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	toolkitFiles, err := parseDir(toolkitDir)
	if err != nil {
		return nil, err
	}
	g.collect("", wireFiles)
	g.collect("toolkit", toolkitFiles)
	for _, f := range wireFiles {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE || gd.Doc == nil {
				continue
			}
			if !slices.ContainsFunc(gd.Doc.List, func(c *ast.Comment) bool { return c.Text == "//wire:message" }) {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				t := g.types[ts.Name.Name]
				if t == nil || t.st == nil {
					return nil, fmt.Errorf("%s: //wire:message on a type that is not a struct", ts.Name.Name)
				}
				g.messages = append(g.messages, t)
			}
		}
	}
	if len(g.messages) == 0 {
		return nil, fmt.Errorf("no //wire:message types in %s", dir)
	}
	for _, m := range g.messages {
		if err := g.resolve(m); err != nil {
			return nil, err
		}
	}
	for _, t := range g.order {
		for _, f := range t.fields {
			if f.extra != "" {
				g.extra[f.ref] = f.extra
				g.extra[t] = ""
			}
			if f.kind == kStructPtr {
				if e := sliceOfStruct(f.ref); e != nil {
					g.spares[e] = true
					g.coallocs[f.ref] = e
				}
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, t := range g.order {
			if g.fails[t] {
				continue
			}
			for _, f := range t.fields {
				if f.kind == kAnyMap || f.kind == kAny || (f.ref != nil && f.ref.st != nil && g.fails[f.ref]) {
					g.fails[t], changed = true, true
					break
				}
			}
		}
	}
	var b bytes.Buffer
	g.write(&b)
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the generated code: %w\n%s", err, b.Bytes())
	}
	return src, nil
}

func moduleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", abs)
		}
	}
}

func parseDir(dir string) ([]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var files []*ast.File
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") || filepath.Base(n) == genFile {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// collect records the package's struct and named string types and the
// constants of the latter.
func (g *generator) collect(pkg string, files []*ast.File) {
	qual := func(name string) string {
		if pkg == "" {
			return name
		}
		return pkg + "." + name
	}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() || s.TypeParams != nil {
						continue
					}
					switch x := s.Type.(type) {
					case *ast.StructType:
						g.types[qual(s.Name.Name)] = &typ{pkg: pkg, name: s.Name.Name, st: x}
					case *ast.Ident:
						if x.Name == "string" {
							g.types[qual(s.Name.Name)] = &typ{pkg: pkg, name: s.Name.Name}
						}
					}
				}
			}
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok {
					continue
				}
				t := g.types[qual(id.Name)]
				if t == nil || t.st != nil {
					continue
				}
				for _, n := range vs.Names {
					t.consts = append(t.consts, qual(n.Name))
				}
			}
		}
	}
}

// lookup resolves a type expression of a field of a type in pkg.
func (g *generator) lookup(pkg string, e ast.Expr) *typ {
	switch x := e.(type) {
	case *ast.Ident:
		if pkg == "" {
			return g.types[x.Name]
		}
		return g.types[pkg+"."+x.Name]
	case *ast.SelectorExpr:
		if p, ok := x.X.(*ast.Ident); ok {
			return g.types[p.Name+"."+x.Sel.Name]
		}
	}
	return nil
}

// resolve works out the fields of a struct and of the structs it refers
// to, appending them to g.order.
func (g *generator) resolve(t *typ) error {
	if t.done {
		return nil
	}
	t.done = true
	for _, fl := range t.st.Fields.List {
		if len(fl.Names) == 0 {
			return fmt.Errorf("%s: embedded fields are not supported", t.goName())
		}
		if fl.Tag == nil {
			return fmt.Errorf("%s.%s: no msgpack tag", t.goName(), fl.Names[0].Name)
		}
		tag, _ := strconv.Unquote(fl.Tag.Value)
		mp, ok := reflect.StructTag(tag).Lookup("msgpack")
		if !ok {
			return fmt.Errorf("%s.%s: no msgpack tag", t.goName(), fl.Names[0].Name)
		}
		key, opts, _ := strings.Cut(mp, ",")
		if key == "-" {
			continue
		}
		f := field{goName: fl.Names[0].Name, key: key, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty")}
		if len(fl.Names) > 1 || key == "" {
			return fmt.Errorf("%s.%s: one field per line, with a key in its msgpack tag", t.goName(), f.goName)
		}
		if w, ok := reflect.StructTag(tag).Lookup("wire"); ok {
			f.extra, ok = strings.CutPrefix(w, "extra=")
			if !ok {
				return fmt.Errorf("%s.%s: unknown wire tag %q", t.goName(), f.goName, w)
			}
		}
		if err := g.fieldKind(t, &f, fl.Type); err != nil {
			return err
		}
		if f.ref != nil && f.ref.st != nil {
			if err := g.resolve(f.ref); err != nil {
				return err
			}
		}
		if f.extra != "" && (f.kind != kStructPtr || !slices.ContainsFunc(f.ref.fields, func(x field) bool { return x.key == f.extra && x.kind == kAnyMap })) {
			return fmt.Errorf("%s.%s: extra=%s needs a pointer to a struct with a map[string]any field %q", t.goName(), f.goName, f.extra, f.extra)
		}
		t.fields = append(t.fields, f)
	}
	g.order = append(g.order, t)
	return nil
}

func (g *generator) fieldKind(t *typ, f *field, e ast.Expr) error {
	bad := func() error {
		return fmt.Errorf("%s.%s: unsupported type %s", t.goName(), f.goName, exprString(e))
	}
	switch x := e.(type) {
	case *ast.Ident:
		switch x.Name {
		case "string":
			f.kind = kString
		case "bool":
			f.kind = kBool
		case "int":
			f.kind = kInt
		case "int64":
			f.kind = kInt64
		case "uint64":
			f.kind = kUint64
		case "float64":
			f.kind = kFloat64
		case "any":
			f.kind = kAny
		default:
			return g.named(t, f, e)
		}
		return nil
	case *ast.InterfaceType:
		if len(x.Methods.List) > 0 {
			return bad()
		}
		f.kind = kAny
		return nil
	case *ast.SelectorExpr:
		return g.named(t, f, e)
	case *ast.StarExpr:
		ref := g.lookup(t.pkg, x.X)
		if ref == nil || ref.st == nil {
			return bad()
		}
		f.kind, f.ref = kStructPtr, ref
		return nil
	case *ast.ArrayType:
		if x.Len != nil {
			return bad()
		}
		if id, ok := x.Elt.(*ast.Ident); ok && id.Name == "string" {
			f.kind = kStrSlice
			return nil
		}
		ref := g.lookup(t.pkg, x.Elt)
		if ref == nil || ref.st == nil {
			return bad()
		}
		f.kind, f.ref = kStructSlice, ref
		return nil
	case *ast.MapType:
		if k, ok := x.Key.(*ast.Ident); !ok || k.Name != "string" {
			return bad()
		}
		switch v := x.Value.(type) {
		case *ast.Ident:
			switch v.Name {
			case "any":
				f.kind = kAnyMap
				return nil
			case "string":
				f.kind = kStrMap
				return nil
			}
		case *ast.InterfaceType:
			if len(v.Methods.List) == 0 {
				f.kind = kAnyMap
				return nil
			}
		}
	}
	return bad()
}

func (g *generator) named(t *typ, f *field, e ast.Expr) error {
	ref := g.lookup(t.pkg, e)
	if ref == nil {
		return fmt.Errorf("%s.%s: unsupported type %s", t.goName(), f.goName, exprString(e))
	}
	f.ref = ref
	if ref.st == nil {
		f.kind = kEnum
	} else {
		f.kind = kStruct
	}
	return nil
}

// words spells a type name in lower-case words: ListReply → "list reply".
func words(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ToLower(string(r)))
	}
	return b.String()
}

func exprString(e ast.Expr) string {
	var b bytes.Buffer
	format.Node(&b, token.NewFileSet(), e)
	return b.String()
}

// sliceOfStruct is the element type of t's first slice-of-struct field.
func sliceOfStruct(t *typ) *typ {
	for _, f := range t.fields {
		if f.kind == kStructSlice {
			return f.ref
		}
	}
	return nil
}

func (g *generator) write(b *bytes.Buffer) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("// Code generated by wiregen from the msgpack tags of the wire messages; DO NOT EDIT.\n\n")
	p("package wire\n\nimport (\n\t\"fmt\"\n\t\"unsafe\"\n\n\t\"github.com/toolbus/toolbus/toolkit\"\n)\n\n")
	p("// Message is one of the wire messages; the codec encodes and decodes only these.\n")
	p("type Message interface {\n\tmessage()\n}\n\n")
	for _, m := range g.messages {
		p("func (*%s) message() {}\n", m.name)
	}
	// One type switch over the messages per entry point: no dynamic call,
	// so a message passed in need not escape to the heap.
	dispatch := func(doc, sig, tail string, body func(m *typ) string) {
		p("\n%sfunc %s {\n\tswitch v := m.(type) {\n", doc, sig)
		for _, m := range g.messages {
			p("\tcase *%s:\n%s", m.name, body(m))
		}
		p("\t}\n%s}\n", tail)
	}
	dispatch("// appendMessage appends the msgpack encoding of m.\n", "appendMessage(b []byte, m Message) ([]byte, error)",
		"\treturn b, errNotMessage\n", func(m *typ) string {
			call := fmt.Sprintf("append%s(b, v", m.fn())
			if _, ok := g.extra[m]; ok {
				call += ", nil"
			}
			call += ")"
			if !g.fails[m] {
				call += ", nil"
			}
			return "\t\treturn " + call + "\n"
		})
	dispatch("// appendMessageJSON appends the JSON encoding of m. It encodes a copy,\n// so that m itself need not live on the heap.\n",
		"appendMessageJSON(b []byte, m Message) ([]byte, error)", "\treturn b, errNotMessage\n",
		func(m *typ) string { return "\t\tx := *v\n\t\treturn appendJSON(b, &x)\n" })
	dispatch("// decodeMessageJSON decodes one JSON message into m, through a copy,\n// so that m itself need not live on the heap.\n",
		"decodeMessageJSON(data []byte, m Message) error", "\treturn errNotMessage\n",
		func(m *typ) string {
			return fmt.Sprintf("\t\tvar x %s\n\t\terr := unmarshalJSON(data, &x)\n\t\t*v = x\n\t\treturn err\n", m.name)
		})
	dispatch("// decodeMessage decodes one msgpack message into m.\n", "decodeMessage(d *decoder, m Message) error",
		"\treturn errNotMessage\n", func(m *typ) string {
			return fmt.Sprintf("\t\tif err := d.decode%s(v); err != nil {\n\t\t\treturn fmt.Errorf(\"%s: %%w\", err)\n\t\t}\n\t\treturn nil\n", m.fn(), words(m.name))
		})
	p("\n")
	var spares []*typ
	for t := range g.spares {
		spares = append(spares, t)
	}
	sort.Slice(spares, func(i, j int) bool { return spares[i].goName() < spares[j].goName() })
	p("// spares are one-element slices allocated with the struct that holds them.\ntype spares struct {\n")
	for _, t := range spares {
		p("\tspare%s []%s\n", t.fn(), t.goName())
	}
	p("}\n\n")
	for _, t := range g.order {
		g.writeEncoder(b, t)
		g.writeDecoder(b, t)
	}
	for _, t := range sortedTypes(g.coallocs) {
		e := g.coallocs[t]
		p("// %s holds a %s and one %s, allocated together.\n", coallocName(t), t.goName(), e.goName())
		p("type %s struct {\n\tv   %s\n\tone [1]%s\n}\n\n", coallocName(t), t.goName(), e.goName())
	}
	for _, t := range g.sliceTypes() {
		spare := ""
		if g.spares[t] {
			spare = fmt.Sprintf("\tif m == 1 && d.spare%s != nil {\n\t\tout, d.spare%s = d.spare%s[:1:1], nil\n\t} else ", t.fn(), t.fn(), t.fn())
		}
		p("func (d *decoder) slice%s() ([]%s, error) {\n", t.fn(), t.goName())
		p("\tm, err := d.arrayLen()\n\tif err != nil || m < 0 {\n\t\treturn nil, err\n\t}\n\tvar out []%s\n", t.goName())
		p("%s{\n\t\tif err := d.charge(m * int(unsafe.Sizeof(%s{}))); err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\tout = make([]%s, m)\n\t}\n", spare, t.goName(), t.goName())
		p("\tif err := d.enter(); err != nil {\n\t\treturn nil, err\n\t}\n\tfor i := range out {\n\t\tif err := d.decode%s(&out[i]); err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t}\n\td.leave()\n\treturn out, nil\n}\n\n", t.fn())
	}
	for _, t := range g.enums() {
		p("func (d *decoder) enum%s() (%s, error) {\n\tp, err := d.rawStr()\n\tif err != nil {\n\t\treturn \"\", err\n\t}\n\tswitch string(p) {\n", t.fn(), t.goName())
		for _, c := range t.consts {
			p("\tcase string(%s):\n\t\treturn %s, nil\n", c, c)
		}
		p("\t}\n\treturn %s(d.keep(p)), nil\n}\n\n", t.goName())
	}
}

func coallocName(t *typ) string {
	n := t.fn()
	return strings.ToLower(n[:1]) + n[1:] + "With1"
}

func sortedTypes(m map[*typ]*typ) []*typ {
	var out []*typ
	for t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].goName() < out[j].goName() })
	return out
}

// sliceTypes are the structs the fields hold slices of, in name order.
func (g *generator) sliceTypes() []*typ {
	seen := map[*typ]bool{}
	var out []*typ
	for _, t := range g.order {
		for _, f := range t.fields {
			if f.kind == kStructSlice && !seen[f.ref] {
				seen[f.ref] = true
				out = append(out, f.ref)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].goName() < out[j].goName() })
	return out
}

// enums are the named string types the fields use, in name order.
func (g *generator) enums() []*typ {
	seen := map[*typ]bool{}
	var out []*typ
	for _, t := range g.order {
		for _, f := range t.fields {
			if f.kind == kEnum && !seen[f.ref] {
				seen[f.ref] = true
				out = append(out, f.ref)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].goName() < out[j].goName() })
	return out
}

// keyBytes is the msgpack encoding of a field key (a fixstr), as a Go
// string literal.
func keyBytes(k string) string {
	if len(k) >= 32 {
		panic("wiregen: field key too long for a fixstr: " + k)
	}
	return strconv.Quote(string([]byte{byte(0xa0 | len(k))}) + k)
}

// present is the condition under which an omitempty field is written.
func present(f field, v string, extra bool) string {
	x := v + "." + f.goName
	switch f.kind {
	case kString, kEnum:
		return x + ` != ""`
	case kBool:
		return x
	case kInt, kInt64, kUint64, kFloat64:
		return x + " != 0"
	case kAnyMap:
		if extra {
			return "len(" + x + ") > 0 || extra != nil"
		}
		return "len(" + x + ") > 0"
	case kStrMap, kStrSlice, kStructSlice:
		return "len(" + x + ") > 0"
	case kStructPtr, kAny:
		return x + " != nil"
	}
	panic(fmt.Sprintf("wiregen: %s: omitempty on a struct value is not supported", f.goName))
}

func (g *generator) writeEncoder(b *bytes.Buffer, t *typ) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	extraKey, takesExtra := g.extra[t]
	fails := g.fails[t]
	ret := "[]byte"
	if fails {
		ret = "([]byte, error)"
	}
	params := "b []byte, v *" + t.goName()
	if takesExtra {
		params += ", extra *MetaEntry"
	}
	p("func append%s(%s) %s {\n", t.fn(), params, ret)
	always := 0
	var conds []string
	for _, f := range t.fields {
		if !f.omitempty {
			always++
			continue
		}
		conds = append(conds, present(f, "v", takesExtra && f.key == extraKey && f.kind == kAnyMap))
	}
	if len(conds) == 0 {
		p("\tb = appendMapLen(b, %d)\n", always)
	} else {
		p("\tn := %d\n", always)
		for _, c := range conds {
			p("\tif %s {\n\t\tn++\n\t}\n", c)
		}
		p("\tb = appendMapLen(b, n)\n")
	}
	if fails {
		p("\tvar err error\n")
	}
	for _, f := range t.fields {
		isExtra := takesExtra && f.key == extraKey && f.kind == kAnyMap
		x := "v." + f.goName
		indent := "\t"
		if f.omitempty {
			p("\tif %s {\n", present(f, "v", isExtra))
			indent = "\t\t"
		}
		p("%sb = append(b, %s...)\n", indent, keyBytes(f.key))
		switch f.kind {
		case kString:
			p("%sb = appendStr(b, %s)\n", indent, x)
		case kEnum:
			p("%sb = appendStr(b, string(%s))\n", indent, x)
		case kBool:
			p("%sb = appendBool(b, %s)\n", indent, x)
		case kInt, kInt64:
			p("%sb = appendInt(b, int64(%s))\n", indent, x)
		case kUint64:
			p("%sb = appendUint(b, %s)\n", indent, x)
		case kFloat64:
			p("%sb = appendFloat64(b, %s)\n", indent, x)
		case kAnyMap:
			if isExtra {
				p("%sif b, err = appendMapExtra(b, %s, extra); err != nil {\n%s\treturn b, err\n%s}\n", indent, x, indent, indent)
			} else {
				p("%sif b, err = appendMap(b, %s); err != nil {\n%s\treturn b, err\n%s}\n", indent, x, indent, indent)
			}
		case kAny:
			p("%sif b, err = appendValue(b, %s); err != nil {\n%s\treturn b, err\n%s}\n", indent, x, indent, indent)
		case kStrMap:
			p("%sb = appendStrMap(b, %s)\n", indent, x)
		case kStrSlice:
			p("%sb = appendStrSlice(b, %s)\n", indent, x)
		case kStruct:
			g.encodeStruct(b, indent, f, "&"+x, fails)
		case kStructPtr:
			if !f.omitempty {
				p("%sif %s == nil {\n%s\tb = appendNil(b)\n%s} else {\n", indent, x, indent, indent)
				g.encodeStruct(b, indent+"\t", f, x, fails)
				p("%s}\n", indent)
			} else {
				g.encodeStruct(b, indent, f, x, fails)
			}
		case kStructSlice:
			if !f.omitempty {
				p("%sif %s == nil {\n%s\tb = appendNil(b)\n%s} else {\n", indent, x, indent, indent)
				indent += "\t"
			}
			p("%sb = appendArrayLen(b, len(%s))\n", indent, x)
			p("%sfor i := range %s {\n", indent, x)
			g.encodeStruct(b, indent+"\t", f, "&"+x+"[i]", fails)
			p("%s}\n", indent)
			if !f.omitempty {
				indent = indent[:len(indent)-1]
				p("%s}\n", indent)
			}
		}
		if f.omitempty {
			p("\t}\n")
		}
	}
	if fails {
		p("\treturn b, nil\n}\n\n")
	} else {
		p("\treturn b\n}\n\n")
	}
}

// encodeStruct appends the call of a referenced struct's encoder.
func (g *generator) encodeStruct(b *bytes.Buffer, indent string, f field, x string, outerFails bool) {
	args := "b, " + x
	if _, ok := g.extra[f.ref]; ok {
		if f.extra != "" {
			args += ", extra"
		} else {
			args += ", nil"
		}
	}
	if g.fails[f.ref] {
		fmt.Fprintf(b, "%sif b, err = append%s(%s); err != nil {\n%s\treturn b, err\n%s}\n", indent, f.ref.fn(), args, indent, indent)
		return
	}
	fmt.Fprintf(b, "%sb = append%s(%s)\n", indent, f.ref.fn(), args)
}

func (g *generator) writeDecoder(b *bytes.Buffer, t *typ) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("func (d *decoder) decode%s(v *%s) error {\n", t.fn(), t.goName())
	p("\tn, err := d.object()\n\tif err != nil {\n\t\treturn err\n\t}\n")
	p("\tfor ; n > 0; n-- {\n\t\tk, err := d.rawStr()\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n")
	p("\t\tswitch string(k) {\n")
	for _, f := range t.fields {
		x := "v." + f.goName
		p("\t\tcase %q:\n", f.key)
		switch f.kind {
		case kString:
			p("\t\t\t%s, err = d.str()\n", x)
		case kEnum:
			p("\t\t\t%s, err = d.enum%s()\n", x, f.ref.fn())
		case kBool:
			p("\t\t\t%s, err = d.boolean()\n", x)
		case kInt:
			p("\t\t\tvar i int64\n\t\t\ti, err = d.int()\n\t\t\t%s = int(i)\n", x)
		case kInt64:
			p("\t\t\t%s, err = d.int()\n", x)
		case kUint64:
			p("\t\t\t%s, err = d.uint()\n", x)
		case kFloat64:
			p("\t\t\t%s, err = d.float()\n", x)
		case kAnyMap:
			p("\t\t\t%s, err = d.mapValue()\n", x)
		case kAny:
			p("\t\t\t%s, err = d.value()\n", x)
		case kStrMap:
			p("\t\t\t%s, err = d.strMap()\n", x)
		case kStrSlice:
			p("\t\t\t%s, err = d.strSlice()\n", x)
		case kStruct:
			p("\t\t\terr = d.decode%s(&%s)\n", f.ref.fn(), x)
		case kStructPtr:
			if e := sliceOfStruct(f.ref); e != nil {
				p("\t\t\tif d.isNil() {\n\t\t\t\t%s = nil\n\t\t\t} else if err = d.charge(int(unsafe.Sizeof(%s{}))); err == nil {\n\t\t\t\tp := new(%s)\n\t\t\t\td.spare%s = p.one[:]\n", x, coallocName(f.ref), coallocName(f.ref), e.fn())
				p("\t\t\t\terr = d.decode%s(&p.v)\n\t\t\t\td.spare%s = nil\n\t\t\t\t%s = &p.v\n\t\t\t}\n", f.ref.fn(), e.fn(), x)
			} else {
				p("\t\t\tif d.isNil() {\n\t\t\t\t%s = nil\n\t\t\t} else if err = d.charge(int(unsafe.Sizeof(%s{}))); err == nil {\n\t\t\t\tp := new(%s)\n\t\t\t\terr = d.decode%s(p)\n\t\t\t\t%s = p\n\t\t\t}\n", x, f.ref.goName(), f.ref.goName(), f.ref.fn(), x)
			}
		case kStructSlice:
			p("\t\t\t%s, err = d.slice%s()\n", x, f.ref.fn())
		}
	}
	p("\t\tdefault:\n\t\t\terr = d.skip()\n\t\t}\n")
	p("\t\tif err != nil {\n\t\t\treturn fieldError(string(k), err)\n\t\t}\n\t}\n\td.leave()\n\treturn nil\n}\n\n")
}
