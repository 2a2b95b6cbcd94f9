package skill

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Skill is one loaded SKILL.md: its front matter's name and description,
// the directory it lives in and the markdown body after the front matter.
// A Skill is a plain value; the tags let transports announce it.
type Skill struct {
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description" msgpack:"description"`
	// Dir is the absolute directory that holds the SKILL.md.
	Dir string `json:"dir" msgpack:"dir"`
	// Markdown is the body after the front matter, trimmed of surrounding
	// white space.
	Markdown string `json:"markdown,omitempty" msgpack:"markdown,omitempty"`
	// Group is the tool group the skill belongs to ("basic" when it was
	// added without one). Set by Set; empty for a skill fresh from a
	// Loader.
	Group string `json:"group,omitempty" msgpack:"group,omitempty"`
	// Metadata is the whole front matter, name and description included.
	Metadata map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
	// UpdatedAt is the SKILL.md modification time when it was loaded.
	UpdatedAt time.Time `json:"updated_at" msgpack:"updated_at"`

	from *origin // where a Loader found it; nil for a skill given in Go
}

// clone returns s with a Metadata of its own: the maps and slices a front
// matter decodes to are copied, so a caller that edits the copy leaves the
// source's skill as it was.
func (s Skill) clone() Skill {
	if s.Metadata != nil {
		s.Metadata = cloneValue(s.Metadata).(map[string]any)
	}
	return s
}

// cloneValue copies the maps and slices of a decoded YAML value; other
// values (scalars, times) are immutable or copied with the value.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = cloneValue(e)
		}
		return c
	case map[any]any:
		c := make(map[any]any, len(v))
		for k, e := range v {
			c[k] = cloneValue(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v
}

// origin is where a Loader found a skill: its files are read from that
// directory and no other (Skill.Files, Skill.ReadFile).
type origin struct {
	base string      // the loader's directory
	rel  string      // the skill's directory within base
	dir  os.FileInfo // the skill's directory, as the load found it
}

// boundaryRE is a front matter delimiter line: three or more dashes.
var boundaryRE = regexp.MustCompile(`^-{3,}[ \t]*$`)

// errFrontMatter prefixes every parse failure so callers can tell them from
// I/O errors.
var errFrontMatter = errors.New("front matter")

// Parse reads a SKILL.md document: YAML front matter between two lines of
// dashes at the very top, then the markdown body. name and description are
// required, non-empty scalars. dir is recorded as the skill's directory.
// The front matter may be at most MaxFrontMatterBytes, no mapping
// of it may hold over MaxMappingKeys keys, its aliases may make it
// hold at most about twice the values written in it, and it may hold
// MaxFrontMatterValues values at most.
// The document must be UTF-8 text, as the body goes to the model as
// text. The errors say what is wrong in words fit for an operator.
func Parse(doc []byte, dir string) (Skill, error) {
	if !utf8.Valid(doc) {
		i := 0 // the first invalid byte, which there is
		for r, n := utf8.DecodeRune(doc); r != utf8.RuneError || n != 1; r, n = utf8.DecodeRune(doc[i:]) {
			i += n
		}
		return Skill{}, fmt.Errorf("not UTF-8: an invalid byte on line %d (a SKILL.md is UTF-8 text)", strings.Count(newlines(string(doc[:i])), "\n")+1)
	}
	text := newlines(string(bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))))
	trimmed := strings.TrimLeftFunc(text, unicode.IsSpace)
	first := strings.Count(text[:len(text)-len(trimmed)], "\n") + 2 // the front matter's first line
	text = strings.TrimSpace(trimmed)
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 || !boundaryRE.MatchString(strings.TrimRight(lines[0], "\n")) {
		return Skill{}, fmt.Errorf("%w: missing: the file must start with a '---' line followed by YAML with name and description", errFrontMatter)
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if boundaryRE.MatchString(strings.TrimRight(lines[i], "\n")) {
			end = i
			break
		}
	}
	if end < 0 {
		return Skill{}, fmt.Errorf("%w: not closed: no second '---' line", errFrontMatter)
	}
	front := strings.Join(lines[1:end], "")
	if len(front) > MaxFrontMatterBytes {
		return Skill{}, fmt.Errorf("%w: %d bytes, over the limit of %d", errFrontMatter, len(front), MaxFrontMatterBytes)
	}
	meta, node, err := decodeFront(front, first)
	if err != nil {
		return Skill{}, err
	}
	name, err := scalar(meta, node, "name", first)
	if err != nil {
		return Skill{}, err
	}
	desc, err := scalar(meta, node, "description", first)
	if err != nil {
		return Skill{}, err
	}
	return Skill{
		Name:        name,
		Description: desc,
		Dir:         dir,
		Markdown:    strings.TrimSpace(strings.Join(lines[end+1:], "")),
		Metadata:    meta,
	}, nil
}

// newlines turns every line end of s into "\n": CRLF, and a lone CR too,
// as AgentScope reads a SKILL.md (Python's text mode, universal newlines).
func newlines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// scalar returns a required front matter field as a string. Numbers,
// booleans and dates are accepted as the text written (1.10, True,
// 2024-01-01), as YAML users expect; node is the front matter's mapping,
// whose first line is line first of the SKILL.md.
func scalar(meta map[string]any, node *yaml.Node, key string, first int) (string, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return "", fmt.Errorf("%w: required field %q is missing", errFrontMatter, key)
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int, int64, uint64, float64, bool, time.Time:
		if s = asWritten(node, key); s == "" {
			s = fmt.Sprint(x)
		}
	default:
		what := fmt.Sprintf("%T", v)
		switch v.(type) {
		case []any:
			what = "a list"
		case map[string]any, map[any]any:
			what = "a mapping"
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			if k := node.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
				return "", fmt.Errorf("%w: line %d: field %q must be a string, not %s", errFrontMatter, first+k.Line-2, key, what)
			}
		}
		return "", fmt.Errorf("%w: field %q must be a string, not %s", errFrontMatter, key, what) // merged in
	}
	if !utf8.ValidString(s) { // !!binary
		return "", fmt.Errorf("%w: field %q is not UTF-8 text", errFrontMatter, key)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("%w: required field %q is empty", errFrontMatter, key)
	}
	return s, nil
}

// MaxMappingKeys is the most keys a mapping of a front matter may hold:
// yaml.v3 compares a mapping's keys pairwise, so the 96000 keys of a
// 1 MiB SKILL.md took a minute and a half to decode, holding its loader
// (and every query) meanwhile.
const MaxMappingKeys = 1000

// MaxFrontMatterValues is the most values a front matter may hold
// (keys, values and the entries of its lists and mappings, each alias
// counted as what it repeats): each is held decoded in Skill.Metadata
// for the skill's life, at some 30 bytes, and 64 KiB may write 32000 of
// them, so 500 such skills (within MaxDirBytes) held half a gigabyte.
const MaxFrontMatterValues = 4096

// MaxFrontMatterBytes is the largest front matter (between its two '---'
// lines) a SKILL.md may have: a name and a description are a few hundred
// bytes, and decoding costs about half a second a MiB, under the loader's
// lock, on every scan that finds the file changed.
const MaxFrontMatterBytes = 64 << 10
