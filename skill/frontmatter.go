package skill

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolbus/toolbus/internal/yamlerr"
	"gopkg.in/yaml.v3"
)

// decodeFront decodes a front matter whose first line is line first of
// the SKILL.md, and returns its mapping's node too (nil when empty).
// Every error names its line in the SKILL.md: yaml.v3 leaves the number out of a syntax error on its first line and out of
// a few others, and counts its parser's lines from 0 and its scanner's
// from 1, so its numbers are mapped here, and found where it gives none.
func decodeFront(front string, first int) (map[string]any, *yaml.Node, error) {
	if line, r, ok := badChar(front); ok {
		return nil, nil, fmt.Errorf("%w: invalid YAML: line %d: control character %U is not allowed in YAML", errFrontMatter, first+line, r)
	}
	// Read as nodes first, which compares no keys, to bound the mappings
	// before they are decoded. The blank line before the front matter
	// puts its first line on yaml.v3's line 2, which yaml.v3 numbers.
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("\n"+front), &root); err != nil {
		return nil, nil, syntaxError(err, front, first)
	}
	if n := widest(&root); n > MaxMappingKeys {
		return nil, nil, fmt.Errorf("%w: %d keys in one mapping, over the limit of %d", errFrontMatter, n, MaxMappingKeys)
	}
	written, held := expanded(&root)
	if held > 2*written+64 {
		return nil, nil, fmt.Errorf("%w: its aliases make %d values of the %d written, more than twice as many", errFrontMatter, held, written)
	}
	if held > MaxFrontMatterValues {
		return nil, nil, fmt.Errorf("%w: %d values, over the limit of %d", errFrontMatter, held, MaxFrontMatterValues)
	}
	if root.Kind == 0 || len(root.Content) == 0 { // empty
		return nil, nil, nil
	}
	if doc := root.Content[0]; doc.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%w: invalid YAML: line %d: the front matter must be a mapping of fields (name: …), not %s", errFrontMatter, first+doc.Line-2, kindName(doc.Kind))
	}
	var meta map[string]any
	if err := root.Decode(&meta); err != nil {
		return nil, nil, decodeError(err, &root, first)
	}
	return meta, root.Content[0], nil
}

// expanded counts the nodes under n as written and as decoding holds
// them, each alias as the node it names; it stops counting held nodes
// past a few times the written ones. yaml.v3 itself refuses aliasing only
// past 99 % of what it decodes: 9 KB of anchors held megabytes.
func expanded(n *yaml.Node) (written, held int) {
	seen := map[*yaml.Node]int{} // a node's held count; -1 while counting it
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			return size(n.Alias)
		}
		switch c, ok := seen[n]; {
		case ok && c < 0:
			return 0 // an anchor holding itself: yaml.v3 refuses it
		case ok:
			return c
		}
		seen[n] = -1
		c := 1
		for _, k := range n.Content {
			if c += size(k); c > 1<<30 {
				break
			}
		}
		seen[n] = c
		return c
	}
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		written++
		for _, k := range n.Content {
			count(k)
		}
	}
	count(n)
	return written, size(n)
}

// badChar finds the first character YAML does not allow (yaml.v3 says
// "control characters are not allowed", without a place): its line in
// s, counted from 0.
func badChar(s string) (line int, r rune, ok bool) {
	for _, c := range s {
		switch {
		case c == '\n':
			line++
		case c == '\t', c == '\r', c >= 0x20 && c <= 0x7e, c == 0x85, c >= 0xa0 && c <= 0xd7ff, c >= 0xe000 && c <= 0xfffd, c >= 0x10000 && c <= 0x10ffff:
		default:
			return line, c, true
		}
	}
	return 0, 0, false
}

var (
	syntaxRE        = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)
	unknownAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
	lineRE          = regexp.MustCompile(`line (\d+)`)
)

// syntaxError is an error of yaml.Unmarshal of "\n"+front, with the
// SKILL.md's line.
func syntaxError(err error, front string, first int) error {
	msg := err.Error()
	line := first // for an error that names no place: the front matter's
	if m := syntaxRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		msg = m[2]
		if yamlerr.FromZero(msg) {
			line = first + n - 1
		} else {
			line = first + n - 2
		}
		if strings.HasPrefix(msg, "found a tab character") {
			// Numbered where the scalar before it began: name the tab's.
			line = first + tabLine(front, line-first)
		}
	} else if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
		line = first + aliasLine(front, m[1])
		msg = strings.TrimPrefix(msg, "yaml: ")
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return fmt.Errorf("%w: invalid YAML: line %d: %s", errFrontMatter, max(line, first), msg)
}

// aliasLine is the line of s (from 0) where alias *name first appears.
func aliasLine(s, name string) int {
	for i, l := range strings.Split(s, "\n") {
		for rest := l; ; {
			j := strings.Index(rest, "*"+name)
			if j < 0 {
				break
			}
			rest = rest[j+1+len(name):]
			if rest == "" || strings.ContainsRune(" \t\r,[]{}", rune(rest[0])) {
				return i
			}
		}
	}
	return 0
}

// tabLine is the first line of s from line from on (both from 0) with a
// tab in its indentation; from when there is none.
func tabLine(s string, from int) int {
	for i, l := range strings.Split(s, "\n") {
		if i >= from && strings.ContainsRune(l[:len(l)-len(strings.TrimLeft(l, " \t"))], '\t') {
			return i
		}
	}
	return from
}

// decodeError is an error of decoding the tree of "\n"+front, with the
// SKILL.md's lines: a yaml.TypeError's (one per problem) are mapped;
// for an error without a line, the node that fails is looked for.
func decodeError(err error, root *yaml.Node, first int) error {
	mapLines := func(s string) string {
		return lineRE.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
			return "line " + strconv.Itoa(max(first+n-2, first))
		})
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			msgs[i] = mapLines(e)
		}
		return fmt.Errorf("%w: invalid YAML: %s", errFrontMatter, strings.Join(msgs, "; "))
	}
	line := failingLine(root)
	if strings.HasPrefix(err.Error(), "yaml: invalid map key") {
		if k := collectionKey(root); k != nil {
			line = k.Line
		}
	}
	return fmt.Errorf("%w: invalid YAML: line %d: %s", errFrontMatter, max(first+line-2, first), strings.TrimPrefix(err.Error(), "yaml: "))
}

// failingLine is the line (in yaml.v3's numbering) of the node that
// fails to decode without naming its place: the first scalar that fails
// alone (a bad !!int, !!binary), else the first merge key, else the
// first alias (one that holds itself, or too many), else the document.
func failingLine(root *yaml.Node) int {
	var scalar, merge, alias *yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.ScalarNode:
			var v any
			if scalar == nil && n.Decode(&v) != nil {
				scalar = n
			}
			if merge == nil && n.Tag == "!!merge" {
				merge = n
			}
		case yaml.AliasNode: // not followed: it names a node of the tree
			if alias == nil {
				alias = n
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	for _, n := range []*yaml.Node{scalar, merge, alias} {
		if n != nil {
			return n.Line
		}
	}
	return root.Line
}

// collectionKey is the first mapping key under n, in document order,
// that is a list or a mapping (or an alias of one), which no map of the
// front matter takes ("invalid map key", without a line).
func collectionKey(n *yaml.Node) *yaml.Node {
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			k := c
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind == yaml.SequenceNode || k.Kind == yaml.MappingNode {
				return c
			}
		}
		if k := collectionKey(c); k != nil {
			return k
		}
	}
	return nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document of another kind"
}

// widest is the number of keys of the largest mapping under n (aliases
// are not followed: they name a node of the tree).
func widest(n *yaml.Node) int {
	w := 0
	if n.Kind == yaml.MappingNode {
		w = len(n.Content) / 2
	}
	for _, c := range n.Content {
		w = max(w, widest(c))
	}
	return w
}

// asWritten is the text of the plain scalar the mapping m gives key, as
// written in the front matter (1.10, True, 2024-01-01, 0x1F), following
// aliases and merge keys as decoding does; "" for anything else (a
// string, whose decoded value is its text, a list, a map).
func asWritten(m *yaml.Node, key string) string {
	var find func(m *yaml.Node, depth int) *yaml.Node
	find = func(m *yaml.Node, depth int) *yaml.Node {
		for m != nil && m.Kind == yaml.AliasNode && depth < 100 {
			m, depth = m.Alias, depth+1
		}
		if m == nil || m.Kind != yaml.MappingNode || depth >= 100 {
			return nil
		}
		var merges []*yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			switch {
			case k.Kind == yaml.ScalarNode && k.Tag == "!!merge":
				merges = append(merges, v)
			case k.Kind == yaml.ScalarNode && k.Value == key:
				return v
			}
		}
		// A direct key wins over a merged one; an earlier merged
		// mapping over a later one.
		for _, v := range merges {
			for v.Kind == yaml.AliasNode && v.Alias != nil && depth < 100 {
				v, depth = v.Alias, depth+1
			}
			list := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				list = v.Content
			}
			for _, mm := range list {
				if n := find(mm, depth+1); n != nil {
					return n
				}
			}
		}
		return nil
	}
	n := find(m, 0)
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	switch n.Tag {
	case "!!int", "!!float", "!!bool", "!!timestamp":
		return n.Value
	}
	return ""
}
