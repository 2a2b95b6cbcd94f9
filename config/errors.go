package config

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolbus/toolbus/internal/yamlerr"
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
//
// A key path is kept as its last step from its parent's path (a place),
// not as a string: a file nested deeply under long keys would otherwise
// hold a copy of every prefix, quadratic in its size (a 1 MiB file took
// gigabytes). Paths are joined when an error needs one, and found by a
// seeded hash of the joined string, checked against the place.
type source struct {
	file    string
	seed    maphash.Seed
	places  []place
	byHash  map[uint64]int32 // a path's hash → its place (the first one)
	entries []entry          // every key and value, in document order
	// fatal are the problems that stop decoding: a key given twice in a
	// mapping, which yaml.v3 reports once per pair (a key given n times
	// gave n²/2 errors), a mapping of over MaxMappingKeys keys, whose
	// keys yaml.v3 compares pairwise, and a null key, which yaml.v3 drops
	// silently.
	fatal Errors
	// types and typed are typeOf's answers, by place.
	types []reflect.Type
	typed []bool
	// expanding are the anchors whose aliases are being walked, so that
	// one inside its own anchor is not walked again; aliased counts the
	// values walked through aliases (see MaxAliased).
	expanding map[*yaml.Node]bool
	aliased   int
	// byValue finds the entries of a line by kind and value (and by the
	// first 7 bytes of a long value, which yaml.v3 errors shorten), so
	// that explaining each of many errors does not scan the file; built
	// when first needed.
	byValue map[valueKey][]int32
}

// place is one key path: the place of its parent path (-1 for the top)
// and a mapping key or a list index.
type place struct {
	parent int32
	key    string
	index  int // -1 for a mapping key
	line   int
	scalar int32 // the entry of its first scalar value, or -1
}

type entry struct {
	line  int
	value string
	at    int32  // the place of its path, -1 for the top
	kind  string // "key", "scalar", "seq" or "map"
}

type valueKey struct {
	line        int
	kind, value string
	prefix      bool // value is the first 7 bytes of a longer one
}

// MaxMappingKeys is the most keys a mapping of a config file may hold.
const MaxMappingKeys = 1000

// MaxAliased is the most values the aliases of a config file (*name, and
// merges "<<: *name") may repeat, all aliases together: aliases that
// multiply (a billion laughs) are refused before they are decoded.
const MaxAliased = 1 << 16

// index records the position of every key and value under n, and the
// problems that stop decoding (fatal).
func (s *source) index(n *yaml.Node) {
	s.seed = maphash.MakeSeed()
	s.byHash = map[uint64]int32{}
	var h maphash.Hash
	h.SetSeed(s.seed)
	s.walk(n, -1, h)
}

// walk indexes n, whose path is the place at with the hash state h.
//
// A value given through an alias is walked where the alias is, as the
// decoder reads it, with the lines of the anchored value (where yaml.v3
// reports its errors): an error about it names the key the alias is
// under, and a value so given counts as given (has). The problems of
// the anchored value itself are recorded where it is written, once.
func (s *source) walk(n *yaml.Node, at int32, h maphash.Hash) {
	if s.expanding != nil && len(s.expanding) > 0 {
		if s.aliased++; s.aliased > MaxAliased {
			return
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		s.alias(n, at, h, false)
	case yaml.DocumentNode:
		for _, c := range n.Content {
			s.walk(c, at, h)
		}
	case yaml.MappingNode:
		s.entries = append(s.entries, entry{line: n.Line, at: at, kind: "map"})
		inAlias := len(s.expanding) > 0
		if keys := len(n.Content) / 2; keys > MaxMappingKeys && !inAlias {
			s.fatal = append(s.fatal, &Error{File: s.file, Line: n.Line, Path: s.path(at),
				Reason: fmt.Sprintf("%d keys in one mapping, over the limit of %d", keys, MaxMappingKeys)})
		}
		// Keys are the same as yaml.v3 compares them: kind and text.
		type id struct {
			kind  yaml.Kind
			value string
		}
		first := make(map[id]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				s.merge(v, at, h)
				continue
			}
			kh := h
			if at >= 0 {
				kh.WriteByte('.')
			}
			kh.WriteString(k.Value)
			p := s.place(kh.Sum64(), place{parent: at, key: k.Value, index: -1, line: k.Line})
			s.entries = append(s.entries, entry{line: k.Line, value: k.Value, at: p, kind: "key"})
			// yaml.v3 drops a null key without a word, strict or not.
			if k.Kind == yaml.ScalarNode && k.Tag == "!!null" && !inAlias {
				s.fatal = append(s.fatal, &Error{File: s.file, Line: k.Line, Path: s.path(at),
					Reason: `a key that is null ("~", "null" or nothing): keys are names`})
			}
			if line, dup := first[id{k.Kind, k.Value}]; dup && !inAlias {
				s.fatal = append(s.fatal, &Error{File: s.file, Line: k.Line, Path: s.path(p),
					Reason: fmt.Sprintf("key %s appears twice (first on line %d)", quoted(k.Value), line)})
			} else {
				first[id{k.Kind, k.Value}] = k.Line
			}
			s.walk(v, p, kh)
		}
	case yaml.SequenceNode:
		s.entries = append(s.entries, entry{line: n.Line, at: at, kind: "seq"})
		for i, c := range n.Content {
			ch := h
			ch.WriteString("[" + strconv.Itoa(i) + "]")
			s.walk(c, s.place(ch.Sum64(), place{parent: at, index: i, line: c.Line}), ch)
		}
	case yaml.ScalarNode:
		if at >= 0 && s.places[at].scalar < 0 {
			s.places[at].scalar = int32(len(s.entries))
		}
		s.entries = append(s.entries, entry{line: n.Line, value: n.Value, at: at, kind: "scalar"})
	}
}

// alias walks the value an alias stands for at the alias's place (into
// the mapping at at, for a merge), unless it is inside that value
// itself. Past MaxAliased values walked so, it stops, with a fatal
// error at the alias.
func (s *source) alias(n *yaml.Node, at int32, h maphash.Hash, merge bool) {
	target := n.Alias
	if target == nil || s.expanding[target] || s.aliased > MaxAliased {
		return
	}
	if merge && target.Kind != yaml.MappingNode {
		return // the decoder refuses it
	}
	if s.expanding == nil {
		s.expanding = map[*yaml.Node]bool{}
	}
	s.expanding[target] = true
	s.walk(target, at, h)
	delete(s.expanding, target)
	if s.aliased > MaxAliased && len(s.expanding) == 0 {
		s.fatal = append(s.fatal, &Error{File: s.file, Line: n.Line, Path: s.path(at),
			Reason: fmt.Sprintf("the aliases (*%s and those before it) repeat over %d values: write the values out, or use fewer aliases", n.Value, MaxAliased)})
	}
}

// merge walks the value of a merge key ("<<") into the mapping at at:
// an alias of a mapping, a mapping, or a list of them.
func (s *source) merge(v *yaml.Node, at int32, h maphash.Hash) {
	switch v.Kind {
	case yaml.AliasNode:
		s.alias(v, at, h, true)
	case yaml.MappingNode:
		s.walk(v, at, h)
	case yaml.SequenceNode:
		for _, c := range v.Content {
			s.merge(c, at, h)
		}
	}
}

// place returns the place of the path with hash h, adding p when it is
// new (a key given twice is one place, at its first line).
func (s *source) place(h uint64, p place) int32 {
	if i, ok := s.byHash[h]; ok && s.places[i].parent == p.parent && s.places[i].step() == p.step() {
		return i
	}
	p.scalar = -1
	s.places = append(s.places, p)
	i := int32(len(s.places) - 1)
	if _, taken := s.byHash[h]; !taken {
		s.byHash[h] = i
	}
	return i
}

// step is how p's path continues its parent's.
func (p place) step() string {
	switch {
	case p.index >= 0:
		return "[" + strconv.Itoa(p.index) + "]"
	case p.parent < 0:
		return p.key
	}
	return "." + p.key
}

// path joins the key path of the place at ("" for the top).
func (s *source) path(at int32) string {
	var steps []string
	for ; at >= 0; at = s.places[at].parent {
		steps = append(steps, s.places[at].step())
	}
	slices.Reverse(steps)
	return strings.Join(steps, "")
}

// find returns the place of path, or -1.
func (s *source) find(path string) int32 {
	i, ok := s.byHash[maphash.String(s.seed, path)]
	if !ok || s.path(i) != path {
		return -1
	}
	return i
}

// line returns the line of path, or of its closest ancestor present in
// the file (a missing key is reported where its parent is).
func (s *source) line(path string) int {
	if s == nil || s.byHash == nil {
		return 0
	}
	for path != "" {
		if i := s.find(path); i >= 0 {
			return s.places[i].line
		}
		path = parent(path)
	}
	return 0
}

// has reports whether the file gives path a value (a key without one,
// null, leaves it unset).
func (s *source) has(path string) bool {
	if s == nil || s.byHash == nil {
		return false
	}
	i := s.find(path)
	if i < 0 || s.places[i].scalar < 0 {
		return false
	}
	switch s.entries[s.places[i].scalar].value {
	case "", "~", "null", "Null", "NULL":
		return false
	}
	return true
}

// candidates are the entries on k's line of its kind with its value, or,
// with k.prefix, whose value is longer than 10 bytes and starts with it,
// in document order.
func (s *source) candidates(k valueKey) []int32 {
	if s.byValue == nil {
		s.byValue = map[valueKey][]int32{}
		for i, en := range s.entries {
			k := valueKey{line: en.line, kind: en.kind, value: en.value}
			s.byValue[k] = append(s.byValue[k], int32(i))
			if len(en.value) > 10 {
				k.value, k.prefix = en.value[:7], true
				s.byValue[k] = append(s.byValue[k], int32(i))
			}
		}
	}
	return s.byValue[k]
}

// pickKey and cursor are explain's progress through the candidates of
// one kind of error on one line.
type pickKey struct {
	valueKey
	into string
}

type cursor struct {
	at    int   // the next candidate to look at
	first int32 // the first that fitted, -1 before
	loose int32 // the first whose type is not known, -1 before
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
	unknownRE    = regexp.MustCompile(`^field (.*) not found in type (\S+)$`)
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
// notUTF8 is an error naming the line and column (in characters) of
// the first byte of data that is not UTF-8, which yaml.v3 does not say;
// nil when there is none, or when data is UTF-16 (with its byte order
// mark, as YAML reads it).
func notUTF8(file string, data []byte) *Error {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return &Error{File: file, Line: line,
				Reason: fmt.Sprintf("the file is not UTF-8 text: byte 0x%02x at column %d is not UTF-8 (YAML files are UTF-8, or UTF-16 with a byte order mark)", data[i], col)}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return nil
}

func (s *source) yamlErrors(err error) Errors {
	var msgs []string
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var es Errors
	next := map[pickKey]*cursor{}
	for _, m := range msgs {
		e := &Error{File: s.file, Reason: strings.TrimPrefix(m, "yaml: ")}
		if sm := lineRE.FindStringSubmatch(m); sm != nil {
			e.Line, _ = strconv.Atoi(sm[1])
			e.Reason = sm[2]
		}
		if yamlerr.FromZero(e.Reason) { // none on the first line: 0
			e.Line++
		}
		s.explain(e, next)
		es = append(es, e)
	}
	slices.SortStableFunc(es, func(a, b *Error) int { return a.Line - b.Line })
	return es
}

// explain rewrites yaml.v3's reasons and finds the key path. Of several
// keys or values on the error's line that could be meant, the first one
// not taken by an earlier error is (yaml.v3 reports in document order)
// among those whose place in a Config has the Go type the error names;
// failing that, one whose type is not known (a scalar) or the last on the
// line (a list or mapping: the innermost).
func (s *source) explain(e *Error, next map[pickKey]*cursor) {
	pick := func(k valueKey, into string) (int32, bool) {
		c := next[pickKey{k, into}]
		if c == nil {
			c = &cursor{first: -1, loose: -1}
			next[pickKey{k, into}] = c
		}
		cands := s.candidates(k)
		for ; c.at < len(cands); c.at++ {
			i := cands[c.at]
			fit := fitExact
			switch into {
			case "":
			case unknownKey:
				fit = s.unknown(s.entries[i].at)
			default:
				fit = s.fits(s.entries[i].at, into)
			}
			if fit == fitExact {
				if c.first < 0 {
					c.first = i
				}
				c.at++
				return i, true
			}
			if fit == fitUnknown && c.loose < 0 {
				c.loose = i
			}
		}
		switch {
		case c.first >= 0: // more errors than fitting entries
			return c.first, true
		case k.kind != "scalar" && len(cands) > 0:
			return cands[len(cands)-1], true
		}
		return c.loose, c.loose >= 0
	}
	switch {
	case unknownRE.MatchString(e.Reason):
		key := unknownRE.FindStringSubmatch(e.Reason)[1]
		if i, ok := pick(valueKey{line: e.Line, kind: "key", value: key}, unknownKey); ok {
			e.Path = s.path(s.entries[i].at)
		}
		e.Reason = fmt.Sprintf("unknown key %s", quoted(key))
		if allowed := keysAt(parent(e.Path)); len(allowed) > 0 {
			e.Reason += " (" + nearKey(key, allowed) + "allowed here: " + strings.Join(allowed, ", ") + ")"
		}
	case cannotRE.MatchString(e.Reason):
		sm := cannotRE.FindStringSubmatch(e.Reason)
		kind, value, into := sm[1], sm[2], sm[3]
		if kind == "seq" || kind == "map" {
			// "groups:\n  - name: [x]" starts two lists on line 2, and the
			// error is about the one where a string goes.
			if i, ok := pick(valueKey{line: e.Line, kind: kind}, into); ok {
				e.Path = s.path(s.entries[i].at)
			}
		} else {
			i, ok := pick(valueKey{line: e.Line, kind: "scalar", value: value}, into)
			if short, truncated := strings.CutSuffix(value, "..."); !ok && truncated && len(short) == 7 { // yaml.v3 shortens long values
				i, ok = pick(valueKey{line: e.Line, kind: "scalar", value: short, prefix: true}, into)
			}
			if ok {
				e.Path, value = s.path(s.entries[i].at), s.entries[i].value
			}
		}
		e.Reason = fmt.Sprintf("invalid value %s: want %s", shown(kind, value), friendly(into))
		if kind != "seq" && kind != "map" && kind != "null" && len(value) <= 64 && friendly(into) == "a mapping" && slices.Contains(keysAt(e.Path), "name") {
			// "tools: [echo]" for "tools: [{name: echo}]"
			e.Reason += fmt.Sprintf(" such as {name: %s}", value)
		}
		if tooLarge(into, value) {
			e.Reason += ", not one this large"
		}
		e.mismatch = true
	case e.Reason == "document contains excessive aliasing":
		// yaml.v3's bound: most of what it decoded came through aliases.
		e.Reason = "the aliases (*name) repeat too many values: write the values out, or use fewer aliases"
	case duplicateRE.MatchString(e.Reason):
		sm := duplicateRE.FindStringSubmatch(e.Reason)
		if c := s.candidates(valueKey{line: e.Line, kind: "key", value: sm[1]}); len(c) > 0 {
			e.Path = s.path(s.entries[c[0]].at)
		}
		e.Reason = fmt.Sprintf("key %s appears twice (first on line %s)", quoted(sm[1]), sm[2])
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
	return quoted(value)
}

// maxQuoted is how much of a value an error quotes: of a longer one, its
// start and its length, so that an error stays a line (a value of 1 MB
// was quoted whole, in each error about it).
const maxQuoted = 64

// quoted is s quoted as %q does, cut after maxQuoted bytes (on a
// character's start) with "…" and its length in bytes.
func quoted(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	n := maxQuoted
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// durationRE is the syntax of time.ParseDuration, but for "0".
var durationRE = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// tooLarge reports whether value, refused as a goType, is written as one
// but does not fit in it: a duration past 292 years either way, a whole
// number out of the type's range.
func tooLarge(goType, value string) bool {
	switch goType {
	case "time.Duration":
		return durationRE.MatchString(value)
	case "int", "int64":
		_, err := strconv.ParseInt(value, 0, 64)
		return errors.Is(err, strconv.ErrRange)
	}
	return false
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
	t, ok := typeAt(path)
	if !ok {
		return nil
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

// How the value at a place fits the Go type a yaml.v3 error names.
const (
	fitNot     = iota
	fitExact   // the type there is that type
	fitUnknown // the place is not one of a Config's (below an interface, say)
)

// unknownKey is explain's "into" for an unknown key: of the keys on the
// error's line with its name, one that is unknown where it is (another
// may be the same key, known, under an alias of the same value).
const unknownKey = "\x00unknown key"

// unknown tells how the key at place at fits an unknown key: not when
// its mapping is a Go map or a Go struct with it.
func (s *source) unknown(at int32) int {
	t := s.typeOf(s.places[at].parent)
	if t == nil {
		return fitExact
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return fitNot
	}
	if _, ok := fieldByTag(t, s.places[at].key); ok {
		return fitNot
	}
	return fitExact
}

// fits tells how the value at place at fits the Go type named into.
func (s *source) fits(at int32, into string) int {
	t := s.typeOf(at)
	if t == nil {
		return fitUnknown
	}
	for t.Kind() == reflect.Pointer && t.String() != into {
		t = t.Elem()
	}
	if t.String() == into {
		return fitExact
	}
	return fitNot
}

// typeOf is the Go type of the value at place at in a Config, nil when
// the place is not one of a Config's; worked out once per place.
func (s *source) typeOf(at int32) reflect.Type {
	if at < 0 {
		return configType
	}
	if s.types == nil {
		s.types = make([]reflect.Type, len(s.places))
		s.typed = make([]bool, len(s.places))
	}
	if s.typed[at] {
		return s.types[at]
	}
	var t reflect.Type
	if parent := s.typeOf(s.places[at].parent); parent != nil {
		t = step(parent, s.places[at])
	}
	s.types[at], s.typed[at] = t, true
	return t
}

// step is the type of p's value inside a value of type t, or nil.
func step(t reflect.Type, p place) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case p.index >= 0:
		if t.Kind() == reflect.Slice {
			return t.Elem()
		}
	case t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() == reflect.Struct:
		if f, ok := fieldByTag(t, p.key); ok {
			return f.Type
		}
	}
	return nil
}

// typeAt is the Go type of the value at path in a Config.
func typeAt(path string) (reflect.Type, bool) {
	t := configType
	for _, tok := range pathTokenRE.FindAllString(path, -1) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(tok, "["):
			if t.Kind() != reflect.Slice {
				return nil, false
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByTag(t, tok)
			if !ok {
				return nil, false
			}
			t = f.Type
		default:
			return nil, false
		}
	}
	return t, true
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

// nearKey is "did you mean KEY? " when key is within an edit per three
// letters (two at most, one for a short key) of an allowed key (a typo,
// most often), the nearest and first of them, else "".
func nearKey(key string, allowed []string) string {
	best, dist := "", min(2, max(1, len(key)/3))+1
	for _, k := range allowed {
		if d := editDistance(key, k); d < dist {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return "did you mean " + best + "? "
}
