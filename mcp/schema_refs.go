package mcp

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// A server's input schema is checked for references the validator would
// follow without end or without bound before the toolkit takes it: the
// toolkit validates every call's input against it (jsonschema-go), which
// applies a $ref, allOf, anyOf and their kin to the same value
// recursively, so a schema whose references come back to where they
// started without descending into the value ({"$ref": "#"}, two $defs
// naming each other) overflowed the stack at the first call, a fatal
// error that ended the worker; and a chain of anyOf of two references to
// the next link is validated once per path, 2^n times for n links,
// holding a core for longer than any deadline.

// maxInPlaceSchemas bounds how many times the validator may apply
// subschemas to one value through references and applicators (the paths
// from a subschema along $ref, $dynamicRef, allOf, anyOf, oneOf, not,
// if, then, else, dependentSchemas).
const maxInPlaceSchemas = 10_000

// In-place applicators: their subschemas apply to the value itself.
var (
	inPlaceOne  = []string{"not", "if", "then", "else"}
	inPlaceList = []string{"allOf", "anyOf", "oneOf"}
	inPlaceMap  = []string{"dependentSchemas", "dependencies"}
	descendOne  = []string{"additionalProperties", "propertyNames", "unevaluatedProperties", "items", "additionalItems", "contains", "unevaluatedItems", "contentSchema"}
	descendList = []string{"prefixItems", "items"}
	descendMap  = []string{"properties", "patternProperties", "$defs", "definitions"}
)

type schemaNode struct {
	m       map[string]any
	base    int // the node whose $id (or the root) is this one's base
	uri     *url.URL
	inPlace []int // subschemas applied to the same value, references resolved
}

type schemaGraph struct {
	nodes   []*schemaNode
	byMap   map[uintptr]int
	byURI   map[string]int
	anchors map[int]map[string]int // by base node: $anchor and $dynamicAnchor
	dynamic map[string][]int       // $dynamicAnchor name → nodes
}

// checkSchemaRefs reports a schema whose references the validator would
// follow for ever or past maxInPlaceSchemas times on one value, and one
// with a reference it cannot follow (one the validator cannot follow
// either: remote, or to nothing).
func checkSchemaRefs(root map[string]any) error {
	g := &schemaGraph{byMap: map[uintptr]int{}, byURI: map[string]int{}, anchors: map[int]map[string]int{}, dynamic: map[string][]int{}}
	if err := g.walk(root, -1, &url.URL{}); err != nil {
		return err
	}
	if !g.hasRefs() {
		return nil
	}
	for i, n := range g.nodes {
		for _, key := range []string{"$ref", "$dynamicRef"} {
			ref, ok := n.m[key].(string)
			if !ok {
				continue
			}
			targets, err := g.resolve(i, ref, key == "$dynamicRef")
			if err != nil {
				return err
			}
			n.inPlace = append(n.inPlace, targets...)
		}
	}
	// Paths counted from each node along in-place edges; a node met again
	// on the way is a cycle.
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
			return fmt.Errorf("input schema: its references form a cycle that never descends into the input (closed by %s): validating any input would never end", g.where(from))
		case done:
			return nil
		}
		state[i] = onPath
		c := 1
		for _, j := range g.nodes[i].inPlace {
			if err := visit(j, i); err != nil {
				return err
			}
			if c += count[j]; c > maxInPlaceSchemas {
				return fmt.Errorf("input schema: its references and applicators apply more than %d subschemas to one value (from %s)", maxInPlaceSchemas, g.where(i))
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

func (g *schemaGraph) hasRefs() bool {
	for _, n := range g.nodes {
		if _, ok := n.m["$ref"]; ok {
			return true
		}
		if _, ok := n.m["$dynamicRef"]; ok {
			return true
		}
	}
	return false
}

// where names node i for an error: its $ref, or its $id.
func (g *schemaGraph) where(i int) string {
	m := g.nodes[i].m
	for _, k := range []string{"$ref", "$dynamicRef", "$id", "$anchor"} {
		if s, ok := m[k].(string); ok {
			return fmt.Sprintf("%s %q", k, cutText(s, 100))
		}
	}
	return "a subschema"
}

func mapID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// walk adds m and its subschemas; parent is the node m is in (-1 for the
// root), baseURI its base URI.
func (g *schemaGraph) walk(m map[string]any, parent int, baseURI *url.URL) error {
	i := len(g.nodes)
	n := &schemaNode{m: m, base: i, uri: baseURI}
	if parent >= 0 {
		n.base = g.nodes[parent].base
	}
	g.nodes = append(g.nodes, n)
	g.byMap[mapID(m)] = i
	if parent < 0 {
		g.byURI[baseURI.String()] = i
	}
	if id, ok := m["$id"].(string); ok && id != "" {
		u, err := url.Parse(id)
		if err != nil {
			return fmt.Errorf("input schema: $id %q: %w", cutText(id, 100), err)
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
	child := func(v any, inPlace bool) error {
		cm, ok := v.(map[string]any)
		if !ok {
			return nil // true, false, or not a schema (the toolkit says so)
		}
		if _, seen := g.byMap[mapID(cm)]; seen {
			return nil
		}
		j := len(g.nodes)
		if err := g.walk(cm, i, n.uri); err != nil {
			return err
		}
		if inPlace {
			n.inPlace = append(n.inPlace, j)
		}
		return nil
	}
	for _, k := range inPlaceOne {
		if err := child(m[k], true); err != nil {
			return err
		}
	}
	for _, k := range descendOne {
		if err := child(m[k], false); err != nil {
			return err
		}
	}
	for _, k := range inPlaceList {
		l, _ := m[k].([]any)
		for _, v := range l {
			if err := child(v, true); err != nil {
				return err
			}
		}
	}
	for _, k := range descendList {
		l, _ := m[k].([]any)
		for _, v := range l {
			if err := child(v, false); err != nil {
				return err
			}
		}
	}
	for _, ks := range [][]string{inPlaceMap, descendMap} {
		for _, k := range ks {
			sub, _ := m[k].(map[string]any)
			for _, v := range sub {
				if err := child(v, k == "dependentSchemas" || k == "dependencies"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (g *schemaGraph) anchor(base int, name string, i int) {
	if g.anchors[base] == nil {
		g.anchors[base] = map[string]int{}
	}
	g.anchors[base][name] = i
}

// resolve is what ref, in node i, refers to: one node, or for a
// $dynamicRef also every node with its fragment as $dynamicAnchor (which
// one applies depends on the path the validator came by).
func (g *schemaGraph) resolve(i int, ref string, dynamic bool) ([]int, error) {
	fail := func(why string) ([]int, error) {
		return nil, fmt.Errorf("input schema: the reference %q cannot be followed: %s", cutText(ref, 100), why)
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
