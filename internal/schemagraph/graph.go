// Package schemagraph reads a JSON schema as its validator
// (jsonschema-go) applies it: a graph of the schema's subschemas, its
// references resolved, whose edges say to which value each subschema is
// applied, the same one ($ref, allOf, anyOf, …: in place) or values inside
// it (properties, items, …: a descent). The MCP client checks a server's
// input schemas with it and the toolkit every tool's, so both refuse the
// same schemas, and the toolkit bounds what validating one input may cost.
//
// The validator follows references and applicators recursively and
// cannot be stopped: references that come back to where they started
// without descending into the value ({"$ref": "#"}, two $defs naming each
// other) overflow the stack at the first call, a fatal error that ends
// the process; a chain of anyOf of two references to the next link
// applies its last link 2^n times to one value for n links; and a schema
// recursive through a descent whose branches descend alike applies itself
// once per path, ~2^n times for an input n levels deep. Check refuses the
// first two at registration; Graph.Cost measures the third for one input
// before it is validated.
package schemagraph

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxInPlace bounds how many times the validator may apply subschemas to
// one value through references and in-place applicators (the paths from
// a subschema along $ref, $dynamicRef, allOf, anyOf, oneOf, not, if, then,
// else, dependentSchemas).
const MaxInPlace = 10_000

// Graph is a schema's subschemas with their references resolved. Node 0
// is the root. A Graph is not changed after Check returns it, and may be
// used by any number of goroutines at once.
type Graph struct {
	nodes   []*node
	byMap   map[uintptr]int
	byURI   map[string]int
	anchors map[int]map[string]int // by base node: $anchor and $dynamicAnchor
	dynamic map[string][]int       // $dynamicAnchor name → nodes
	refs    bool                   // some node has a $ref or $dynamicRef
}

// node is a subschema (an object; true and false apply nothing further).
// Its edges are the subschemas the validator applies, by what they apply
// to; -1 stands for a boolean subschema where a position counts.
type node struct {
	m    map[string]any
	base int // the node whose $id (or the root) is this one's base
	uri  *url.URL

	inPlace    []int          // to the value itself, references resolved
	props      map[string]int // properties: to the property of that name
	patterns   []pattern      // patternProperties: to each property matching
	additional []int          // additionalProperties: to the properties neither names
	everyProp  []int          // unevaluatedProperties: to properties (all, at most)
	names      []int          // propertyNames: to each property's name
	positional []int          // prefixItems, items as a list: to the item at that index
	rest       []int          // additionalItems: to the items after those
	everyItem  []int          // contains, unevaluatedItems: to every item
}

type pattern struct {
	re   *regexp.Regexp // nil: not compiled, taken to match every name
	node int
}

// Keywords by what their subschemas apply to. $defs, definitions and
// contentSchema hold subschemas the validator applies only through a
// reference, if at all; they are walked for their $id and anchors.
var (
	inPlaceOne  = []string{"not", "if", "then", "else"}
	inPlaceList = []string{"allOf", "anyOf", "oneOf"}
	inPlaceMap  = []string{"dependentSchemas", "dependencies"}
)

// Check builds the graph of schema (a decoded JSON object) and reports a
// schema whose references the validator would follow for ever or more
// than MaxInPlace times on one value, and one with a reference it cannot
// follow (one the validator cannot follow either: remote, or to nothing).
// A schema without references is a tree, each of its subschemas applied
// at most once per value; only a reference may bring one back.
func Check(schema map[string]any) (*Graph, error) {
	g := &Graph{byMap: map[uintptr]int{}, byURI: map[string]int{}, anchors: map[int]map[string]int{}, dynamic: map[string][]int{}}
	if _, err := g.walk(schema, -1, &url.URL{}); err != nil {
		return nil, err
	}
	if !g.refs {
		return g, nil
	}
	for i, n := range g.nodes {
		for _, key := range []string{"$ref", "$dynamicRef"} {
			ref, ok := n.m[key].(string)
			if !ok {
				continue
			}
			targets, err := g.resolve(i, ref, key == "$dynamicRef")
			if err != nil {
				return nil, err
			}
			n.inPlace = append(n.inPlace, targets...)
		}
	}
	if err := g.checkInPlace(); err != nil {
		return nil, err
	}
	return g, nil
}

// checkInPlace counts the paths from each node along in-place edges; a
// node met again on the way is a cycle.
func (g *Graph) checkInPlace() error {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(g.nodes))
	count := make([]int, len(g.nodes))
	var visit func(i, from int) error
	visit = func(i, from int) error {
		switch state[i] {
		case onPath:
			return fmt.Errorf("its references form a cycle that never descends into the input (closed by %s): validating any input would never end", g.where(from))
		case done:
			return nil
		}
		state[i] = onPath
		c := 1
		for _, j := range g.nodes[i].inPlace {
			if err := visit(j, i); err != nil {
				return err
			}
			if c += count[j]; c > MaxInPlace {
				return fmt.Errorf("its references and applicators apply more than %d subschemas to one value (from %s)", MaxInPlace, g.where(i))
			}
		}
		state[i], count[i] = done, c
		return nil
	}
	for i := range g.nodes {
		if err := visit(i, i); err != nil {
			return err
		}
	}
	return nil
}

// where names node i for an error: its $ref, or its $id.
func (g *Graph) where(i int) string {
	m := g.nodes[i].m
	for _, k := range []string{"$ref", "$dynamicRef", "$id", "$anchor"} {
		if s, ok := m[k].(string); ok {
			return fmt.Sprintf("%s %q", k, cut(s, 100))
		}
	}
	return "a subschema"
}

func mapID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// walk adds m and its subschemas and returns m's node; parent is the node
// m is in (-1 for the root), baseURI its base URI. A map met before (a Go
// schema may hold one twice) is the node it was.
func (g *Graph) walk(m map[string]any, parent int, baseURI *url.URL) (int, error) {
	if i, seen := g.byMap[mapID(m)]; seen {
		return i, nil
	}
	i := len(g.nodes)
	n := &node{m: m, base: i, uri: baseURI}
	if parent >= 0 {
		n.base = g.nodes[parent].base
	}
	g.nodes = append(g.nodes, n)
	g.byMap[mapID(m)] = i
	if parent < 0 {
		g.byURI[baseURI.String()] = i
	}
	if _, ok := m["$ref"]; ok {
		g.refs = true
	}
	if _, ok := m["$dynamicRef"]; ok {
		g.refs = true
	}
	if id, ok := m["$id"].(string); ok && id != "" {
		u, err := url.Parse(id)
		if err != nil {
			return 0, fmt.Errorf("$id %q: %w", cut(id, 100), err)
		}
		if !strings.HasPrefix(id, "#") {
			n.uri = baseURI.ResolveReference(u)
			n.uri.Fragment = ""
			n.base = i
			g.byURI[n.uri.String()] = i
		} else {
			g.anchor(n.base, u.Fragment, i) // draft 7: "$id": "#name" is an anchor
		}
	}
	if a, ok := m["$anchor"].(string); ok && a != "" {
		g.anchor(n.base, a, i)
	}
	if a, ok := m["$dynamicAnchor"].(string); ok && a != "" {
		g.anchor(n.base, a, i)
		g.dynamic[a] = append(g.dynamic[a], i)
	}
	// child walks v, a subschema of m, and returns its node, or -1 for
	// true, false, or what is not a schema (the validator says so).
	var err error
	child := func(v any) int {
		cm, ok := v.(map[string]any)
		if !ok || err != nil {
			return -1
		}
		var j int
		j, err = g.walk(cm, i, n.uri)
		return j
	}
	add := func(edges *[]int, v any) {
		if j := child(v); j >= 0 {
			*edges = append(*edges, j)
		}
	}
	for _, k := range inPlaceOne {
		add(&n.inPlace, m[k])
	}
	for _, k := range inPlaceList {
		l, _ := m[k].([]any)
		for _, v := range l {
			add(&n.inPlace, v)
		}
	}
	for _, k := range inPlaceMap {
		sub, _ := m[k].(map[string]any)
		for _, v := range sub {
			add(&n.inPlace, v)
		}
	}
	add(&n.additional, m["additionalProperties"])
	add(&n.everyProp, m["unevaluatedProperties"])
	add(&n.names, m["propertyNames"])
	add(&n.rest, m["additionalItems"])
	add(&n.everyItem, m["contains"])
	add(&n.everyItem, m["unevaluatedItems"])
	child(m["contentSchema"])
	// items is one schema for every item (draft 7, or 2020-12 after
	// prefixItems: taken as every item, at most), or a list (draft 7) by
	// position, as prefixItems is; both lists at once (each draft ignores
	// one) apply to every item, at most.
	items, list := m["items"].([]any)
	if !list {
		add(&n.everyItem, m["items"])
	}
	prefix, ok := m["prefixItems"].([]any)
	if list && ok {
		for _, v := range items {
			add(&n.everyItem, v)
		}
	} else if list {
		prefix = items
	}
	for _, v := range prefix {
		n.positional = append(n.positional, child(v))
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			if j := child(v); j >= 0 {
				if n.props == nil {
					n.props = map[string]int{}
				}
				n.props[k] = j
			}
		}
	}
	if pats, ok := m["patternProperties"].(map[string]any); ok {
		for k, v := range pats {
			if j := child(v); j >= 0 {
				re, _ := regexp.Compile(k)
				n.patterns = append(n.patterns, pattern{re, j})
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		defs, _ := m[k].(map[string]any)
		for _, v := range defs {
			child(v)
		}
	}
	return i, err
}

func (g *Graph) anchor(base int, name string, i int) {
	if g.anchors[base] == nil {
		g.anchors[base] = map[string]int{}
	}
	g.anchors[base][name] = i
}

// resolve is what ref, in node i, refers to: one node, or for a
// $dynamicRef also every node with its fragment as $dynamicAnchor (which
// one applies depends on the path the validator came by).
func (g *Graph) resolve(i int, ref string, dynamic bool) ([]int, error) {
	fail := func(why string) ([]int, error) {
		return nil, fmt.Errorf("the reference %q cannot be followed: %s", cut(ref, 100), why)
	}
	u, err := url.Parse(ref)
	if err != nil {
		return fail(err.Error())
	}
	base := g.nodes[g.nodes[i].base]
	abs := base.uri.ResolveReference(u)
	frag := abs.Fragment
	abs.Fragment = ""
	doc, ok := g.byURI[abs.String()]
	if !ok {
		return fail("it names no schema of this one")
	}
	var out []int
	if dynamic {
		out = append(out, g.dynamic[frag]...)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		t, ok := g.anchors[doc][frag]
		if !ok {
			return fail("no such anchor")
		}
		return append(out, t), nil
	}
	var v any = g.nodes[doc].m
	if frag != "" {
		for _, seg := range strings.Split(frag[1:], "/") {
			seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
			switch x := v.(type) {
			case map[string]any:
				v = x[seg]
			case []any:
				k, err := strconv.Atoi(seg)
				if err != nil || k < 0 || k >= len(x) {
					return fail("no such place in the schema")
				}
				v = x[k]
			default:
				return fail("no such place in the schema")
			}
		}
	}
	switch x := v.(type) {
	case bool:
		return out, nil // true or false: applies nothing further
	case map[string]any:
		t, ok := g.byMap[mapID(x)]
		if !ok {
			return fail("it points into a value that is not a subschema")
		}
		return append(out, t), nil
	}
	return fail("no such place in the schema")
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
