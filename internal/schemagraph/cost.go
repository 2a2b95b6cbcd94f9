package schemagraph

import "reflect"

// Paths is how many paths lead from the root along the subschemas the
// validator applies, in place or in a descent, or limit+1 when there are
// more; a cycle (a schema recursive through a descent) makes them
// endless. Validating an input of n values applies at most Paths
// subschemas to each, so a schema of few paths costs what its size
// does; one of many may cost more for one input than for another
// (Cost).
func (g *Graph) Paths(limit int) int {
	over := min(limit, maxBudget) + 1
	const onPath = -1
	count := make([]int, len(g.nodes)) // 0: not yet counted
	var visit func(i int) int
	visit = func(i int) int {
		switch c := count[i]; {
		case c == onPath:
			return over
		case c > 0:
			return c
		}
		count[i] = onPath
		c := 1
		g.nodes[i].each(func(j int) bool {
			c = min(c+visit(j), over)
			return c < over
		})
		count[i] = c
		return c
	}
	return visit(0)
}

// Size is how many subschemas (objects) the schema holds, its root
// included; Paths is at least the number of those the root reaches.
func (g *Graph) Size() int { return len(g.nodes) }

// each calls f with every subschema n applies, to any value, until f
// returns false.
func (n *node) each(f func(j int) bool) {
	for _, l := range [][]int{n.inPlace, n.additional, n.everyProp, n.names, n.positional, n.rest, n.everyItem} {
		for _, j := range l {
			if j >= 0 && !f(j) {
				return
			}
		}
	}
	for _, j := range n.props {
		if !f(j) {
			return
		}
	}
	for _, p := range n.patterns {
		if !f(p.node) {
			return
		}
	}
}

// maxBudget keeps Cost's and Paths' sums clear of overflow.
const maxBudget = 1 << 40

// Cost is how many times, at most, the validator applies a subschema to
// a value to validate v against the schema, or budget+1 when that is
// more than budget or v is nested more than MaxDepth levels deep (or holds
// itself). It counts every branch as though none failed early (the
// validator stops at a subschema's first failure) and a true or false
// subschema as nothing; v is a JSON value as the validator takes it (maps
// with string keys, slices and arrays, scalars; pointers and interfaces
// followed).
//
// Its own work is bounded by budget too, and is far less: it stops once
// it has counted budget applications one by one, and it counts a pair of
// subschema and value that comes to memoFrom or more once (a map or a
// slice by its identity; a value with nothing inside as any other), so
// the count of a schema whose branches descend alike grows with the
// input's depth, not with its paths.
func (g *Graph) Cost(v any, budget int) int {
	budget = min(max(budget, 0), maxBudget)
	c := &counter{g: g, budget: budget, over: budget + 1}
	return c.count(0, v, 0)
}

// MaxDepth bounds how deeply Cost follows an input: encoding/json decodes
// nothing deeper.
const MaxDepth = 10_000

// memoFrom is the count from which Cost keeps a pair's: below it,
// counting the pair again costs about what keeping it does.
const memoFrom = 64

type counter struct {
	g            *Graph
	budget, over int
	steps        int             // applications counted one by one
	memo         map[memoKey]int // nil until a pair is kept
}

// memoKey is a pair of subschema and value: a map by its pointer (n =
// -1), a slice by its first element's address and length, anything
// without containers inside as the zero value (ptr = 0).
type memoKey struct {
	node int
	ptr  uintptr
	n    int
}

// count is Cost's for node i and value v, depth levels into the input.
func (c *counter) count(i int, v any, depth int) int {
	if depth > MaxDepth {
		return c.over
	}
	key, keyed := identify(v)
	key.node = i
	if keyed && c.memo != nil {
		if got, ok := c.memo[key]; ok {
			return got
		}
	}
	if c.steps++; c.steps > c.budget {
		return c.over
	}
	total := 1
	add := func(x int) bool {
		total = min(total+x, c.over)
		return total < c.over && c.steps <= c.budget
	}
	c.apply(c.g.nodes[i], v, depth, add)
	if keyed && total >= memoFrom {
		if c.memo == nil {
			c.memo = map[memoKey]int{}
		}
		c.memo[key] = total
	}
	return total
}

// apply counts the subschemas n applies to v, and to the values inside
// it, until add reports the count over.
func (c *counter) apply(n *node, v any, depth int, add func(int) bool) {
	for _, j := range n.inPlace {
		if !add(c.count(j, v, depth)) {
			return
		}
	}
	m, l := view(v)
	for name, j := range n.props {
		if p, ok := m[name]; ok && !add(c.count(j, p, depth+1)) {
			return
		}
	}
	if len(n.patterns)+len(n.additional)+len(n.everyProp)+len(n.names) > 0 {
		for name, p := range m {
			if !c.property(n, name, p, depth+1, add) {
				return
			}
		}
	}
	if len(n.positional)+len(n.rest)+len(n.everyItem) > 0 {
		for k, item := range l {
			if !c.item(n, k, item, depth+1, add) {
				return
			}
		}
	}
}

// property counts the subschemas of n other than properties' applied to
// the property name, of value p; false when the count is over.
func (c *counter) property(n *node, name string, p any, depth int, add func(int) bool) bool {
	matched := false
	for _, pat := range n.patterns {
		if pat.re == nil || pat.re.MatchString(name) {
			matched = true
			if !add(c.count(pat.node, p, depth)) {
				return false
			}
		}
	}
	if _, named := n.props[name]; !named && !matched {
		for _, j := range n.additional {
			if !add(c.count(j, p, depth)) {
				return false
			}
		}
	}
	for _, j := range n.everyProp {
		if !add(c.count(j, p, depth)) {
			return false
		}
	}
	for _, j := range n.names {
		if !add(c.count(j, nil, depth)) { // a name is a string: nothing inside
			return false
		}
	}
	return true
}

// item counts the subschemas of n applied to item k.
func (c *counter) item(n *node, k int, item any, depth int, add func(int) bool) bool {
	if k < len(n.positional) {
		if j := n.positional[k]; j >= 0 && !add(c.count(j, item, depth)) {
			return false
		}
	} else {
		for _, j := range n.rest {
			if !add(c.count(j, item, depth)) {
				return false
			}
		}
	}
	for _, j := range n.everyItem {
		if !add(c.count(j, item, depth)) {
			return false
		}
	}
	return true
}

// identify returns the key of v, a value the validator descends into: a
// map or a slice by its identity, an array not at all (keyed false: it is
// counted again each time, within the budget), a value with nothing
// inside as the zero key.
func identify(v any) (memoKey, bool) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			return memoKey{ptr: reflect.ValueOf(v).Pointer(), n: -1}, true
		}
		return memoKey{}, true
	case []any:
		if len(x) > 0 {
			return memoKey{ptr: reflect.ValueOf(v).Pointer(), n: len(x)}, true
		}
		return memoKey{}, true
	case nil, string, float64, bool, int, int64:
		return memoKey{}, true
	}
	rv := deref(reflect.ValueOf(v))
	switch {
	case !container(rv):
		return memoKey{}, true
	case rv.Kind() == reflect.Map:
		return memoKey{ptr: rv.Pointer(), n: -1}, true
	case rv.Kind() == reflect.Slice:
		return memoKey{ptr: rv.Pointer(), n: rv.Len()}, true
	}
	return memoKey{}, false
}

// view is v's properties, or its items, as the validator descends into
// them: v's own, or a shallow copy of a map or slice of Go types other
// than JSON's (a Go caller's input).
func view(v any) (map[string]any, []any) {
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case []any:
		return nil, x
	case nil, string, float64, bool, int, int64:
		return nil, nil
	}
	rv := deref(reflect.ValueOf(v))
	if !container(rv) {
		return nil, nil
	}
	if rv.Kind() == reflect.Map {
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return m, nil
	}
	l := make([]any, rv.Len())
	for k := range l {
		l[k] = rv.Index(k).Interface()
	}
	return nil, l
}

// deref steps through pointers and interfaces, as the validator does.
func deref(rv reflect.Value) reflect.Value {
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		rv = rv.Elem()
	}
	return rv
}

// container reports whether the validator descends into rv: a map with
// string keys (it refuses others at once), a slice or an array, not
// empty.
func container(rv reflect.Value) bool {
	switch rv.Kind() {
	case reflect.Map:
		return rv.Type().Key().Kind() == reflect.String && rv.Len() > 0
	case reflect.Slice, reflect.Array:
		return rv.Len() > 0
	}
	return false
}
