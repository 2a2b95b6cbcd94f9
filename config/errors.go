package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is one problem with a config: the file, the line (0 when it is not
// known, as for a Config built in code) and the key path of the value, and
// the reason. It prints as "file:line: path: reason".
type Error struct {
	File   string
	Line   int
	Path   string // e.g. "groups[1].name"
	Reason string

	mismatch bool // a value of the wrong type, left unset
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(cmpOr(e.File, "config"))
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Errors are all the problems found in one config, in line order. Load,
// Parse and Validate return them; errors.As finds the first *Error.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// source remembers where each value of a config file is.
type source struct {
	file    string
	lines   map[string]int // key path -> line
	entries []entry        // every key and scalar, in document order
}

type entry struct {
	line  int
	value string
	path  string
	kind  string // "key", "scalar", "seq" or "map"
}

// index records the position of every key and value under n.
func (s *source) index(n *yaml.Node) {
	s.lines = map[string]int{}
	s.walk(n, "")
}

func (s *source) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			s.walk(c, path)
		}
	case yaml.MappingNode:
		s.entries = append(s.entries, entry{line: n.Line, path: path, kind: "map"})
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if _, seen := s.lines[p]; !seen {
				s.lines[p] = k.Line
			}
			s.entries = append(s.entries, entry{line: k.Line, value: k.Value, path: p, kind: "key"})
			s.walk(v, p)
		}
	case yaml.SequenceNode:
		s.entries = append(s.entries, entry{line: n.Line, path: path, kind: "seq"})
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			s.lines[p] = c.Line
			s.walk(c, p)
		}
	case yaml.ScalarNode:
		s.entries = append(s.entries, entry{line: n.Line, value: n.Value, path: path, kind: "scalar"})
	}
}

// line returns the line of path, or of its closest ancestor present in
// the file (a missing key is reported where its parent is).
func (s *source) line(path string) int {
	if s == nil {
		return 0
	}
	for path != "" {
		if l, ok := s.lines[path]; ok {
			return l
		}
		path = parent(path)
	}
	return 0
}

// has reports whether the file gives path a value (a key without one,
// null, leaves it unset).
func (s *source) has(path string) bool {
	if s == nil {
		return false
	}
	for _, e := range s.entries {
		if e.path == path && e.kind == "scalar" {
			switch e.value {
			case "", "~", "null", "Null", "NULL":
				return false
			}
			return true
		}
	}
	return false
}

func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

var (
	lineRE       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRE    = regexp.MustCompile(`^field (.+) not found in type (\S+)$`)
	cannotRE     = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
	duplicateRE  = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	pathTokenRE  = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)
	configType   = reflect.TypeFor[Config]()
	friendlyType = map[string]string{
		"time.Duration": "a duration such as 30s, 1m30s or 2h",
		"int":           "a whole number",
		"int64":         "a whole number",
		"float64":       "a number",
		"bool":          "true or false",
		"string":        "a string",
	}
)

// yamlErrors turns a yaml.v3 error into Errors with lines, key paths and
// reasons worded for a person.
func (s *source) yamlErrors(err error) Errors {
	var msgs []string
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var es Errors
	for _, m := range msgs {
		e := &Error{File: s.file, Reason: strings.TrimPrefix(m, "yaml: ")}
		if sm := lineRE.FindStringSubmatch(m); sm != nil {
			e.Line, _ = strconv.Atoi(sm[1])
			e.Reason = sm[2]
		}
		s.explain(e)
		es = append(es, e)
	}
	slices.SortStableFunc(es, func(a, b *Error) int { return a.Line - b.Line })
	return es
}

// explain rewrites yaml.v3's reasons and finds the key path.
func (s *source) explain(e *Error) {
	switch {
	case unknownRE.MatchString(e.Reason):
		key := unknownRE.FindStringSubmatch(e.Reason)[1]
		for _, en := range s.entries {
			if en.kind == "key" && en.line == e.Line && en.value == key {
				e.Path = en.path
				break
			}
		}
		e.Reason = fmt.Sprintf("unknown key %q", key)
		if allowed := keysAt(parent(e.Path)); len(allowed) > 0 {
			e.Reason += " (allowed here: " + strings.Join(allowed, ", ") + ")"
		}
	case cannotRE.MatchString(e.Reason):
		sm := cannotRE.FindStringSubmatch(e.Reason)
		kind, value, into := sm[1], sm[2], sm[3]
		want := "scalar"
		if kind == "seq" || kind == "map" {
			want = kind
		}
		short, truncated := strings.CutSuffix(value, "...") // yaml.v3 shortens long values
		// The last match on the line is the innermost: "groups:\n  - name: [x]"
		// starts two lists on line 2, and the error is about the second.
		for _, en := range s.entries {
			if en.line == e.Line && en.kind == want &&
				(want != "scalar" || en.value == value || truncated && strings.HasPrefix(en.value, short)) {
				e.Path = en.path
				if want == "scalar" {
					value = en.value
					break
				}
			}
		}
		e.Reason = fmt.Sprintf("invalid value %s: want %s", shown(kind, value), friendly(into))
		e.mismatch = true
	case duplicateRE.MatchString(e.Reason):
		sm := duplicateRE.FindStringSubmatch(e.Reason)
		for _, en := range s.entries {
			if en.kind == "key" && en.line == e.Line && en.value == sm[1] {
				e.Path = en.path
				break
			}
		}
		e.Reason = fmt.Sprintf("key %q appears twice (first on line %s)", sm[1], sm[2])
	}
}

func shown(kind, value string) string {
	switch kind {
	case "map":
		return "(a mapping)"
	case "seq":
		return "(a list)"
	case "null":
		return "(null)"
	}
	return strconv.Quote(value)
}

func friendly(goType string) string {
	switch {
	case friendlyType[goType] != "":
		return friendlyType[goType]
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	default:
		return "a mapping"
	}
}

// keysAt lists the keys allowed in the mapping at path, from the yaml
// tags of the Go type there.
func keysAt(path string) []string {
	t := configType
	for _, tok := range pathTokenRE.FindAllString(path, -1) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(tok, "["):
			if t.Kind() != reflect.Slice {
				return nil
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByTag(t, tok)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for f := range t.Fields() {
		if tag := yamlName(f); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}
