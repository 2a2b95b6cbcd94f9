package skill

import (
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    Skill
		wantErr string
	}{
		{
			name: "valid",
			doc:  "---\nname: root_skill\ndescription: A skill in the root directory\nlicense: MIT\n---\n\nThis is the root skill content.\n",
			want: Skill{Name: "root_skill", Description: "A skill in the root directory", Markdown: "This is the root skill content."},
		},
		{
			name: "crlf, bom and leading blank lines",
			doc:  "\xef\xbb\xbf\r\n---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\nline 2\r\n",
			want: Skill{Name: "a", Description: "b", Markdown: "body\nline 2"},
		},
		{
			// AgentScope reads a SKILL.md in Python's text mode, whose
			// universal newlines take a lone CR for a line end too.
			name: "lone CR line ends",
			doc:  "---\rname: a\rdescription: b\r---\rbody\rline 2\r\nline 3\r",
			want: Skill{Name: "a", Description: "b", Markdown: "body\nline 2\nline 3"},
		},
		{
			name: "long delimiters and empty body",
			doc:  "-----\nname: a\ndescription: b\n-----\n",
			want: Skill{Name: "a", Description: "b"},
		},
		{
			name: "numbers are text",
			doc:  "---\nname: 42\ndescription: true\n---\nx",
			want: Skill{Name: "42", Description: "true", Markdown: "x"},
		},
		{
			// As written: 1.10 was "1.1", True "true", and a date was
			// refused ("got time.Time"), which 2.x takes as its text.
			name: "scalars as written",
			doc:  "---\nname: 1.10\ndescription: 2024-01-01\nversion: True\n---\nx",
			want: Skill{Name: "1.10", Description: "2024-01-01", Markdown: "x"},
		},
		{
			name: "hex, infinity and booleans as written",
			doc:  "---\nname: 0x1F\ndescription: .inf\n---\nx",
			want: Skill{Name: "0x1F", Description: ".inf", Markdown: "x"},
		},
		{
			name: "a merged or aliased name",
			doc:  "---\nbase: &b {name: 1.50}\n<<: *b\ndescription: &d True\nalias: *d\n---\nx",
			want: Skill{Name: "1.50", Description: "True", Markdown: "x"},
		},
		{name: "no front matter", doc: "# Title\nbody", wantErr: "front matter: missing"},
		{name: "empty file", doc: "", wantErr: "front matter: missing"},
		{name: "not closed", doc: "---\nname: a\ndescription: b\n", wantErr: "front matter: not closed"},
		{name: "bad yaml", doc: "---\nname: [a\ndescription: b\n---\n", wantErr: "front matter: invalid YAML"},
		{name: "yaml list", doc: "---\n- a\n- b\n---\n", wantErr: "front matter: invalid YAML"},
		{name: "empty front matter", doc: "---\n---\nbody", wantErr: `required field "name" is missing`},
		{name: "missing name", doc: "---\ndescription: b\n---\n", wantErr: `required field "name" is missing`},
		{name: "missing description", doc: "---\nname: a\n---\n", wantErr: `required field "description" is missing`},
		{name: "null name", doc: "---\nname:\ndescription: b\n---\n", wantErr: `required field "name" is missing`},
		{name: "blank description", doc: "---\nname: a\ndescription: '  '\n---\n", wantErr: `required field "description" is empty`},
		// In words, with its line, not as a Go type ("got []interface {}").
		{name: "name is a list", doc: "---\nname: [a, b]\ndescription: b\n---\n", wantErr: `front matter: line 2: field "name" must be a string, not a list`},
		{name: "description is a map", doc: "\n---\nname: a\ndescription:\n  x: 1\n---\n", wantErr: `front matter: line 4: field "description" must be a string, not a mapping`},
		{name: "merged name is a list", doc: "---\nb: &b {name: [a]}\n<<: *b\ndescription: b\n---\n", wantErr: `front matter: field "name" must be a string, not a list`},
		{name: "too many keys", doc: "---\nname: a\ndescription: b\n" + keys(MaxMappingKeys-1) + "---\n", wantErr: "front matter: 1001 keys in one mapping, over the limit of 1000"},
		{name: "front matter too large", doc: "---\nname: a\ndescription: " + strings.Repeat("x", MaxFrontMatterBytes) + "\n---\nbody", wantErr: "front matter: 65558 bytes, over the limit of 65536"},
		{name: "front matter at the limit", doc: "---\nname: a\ndescription: " + strings.Repeat("x", MaxFrontMatterBytes-len("name: a\ndescription: \n")) + "\n---\nbody",
			want: Skill{Name: "a", Description: strings.Repeat("x", MaxFrontMatterBytes-len("name: a\ndescription: \n")), Markdown: "body"}},
		{name: "too many keys, nested", doc: "---\nname: a\ndescription: b\nm:\n" + indent(keys(MaxMappingKeys+1)) + "---\n", wantErr: "front matter: 1001 keys in one mapping, over the limit of 1000"},
		{name: "keys at the limit", doc: "---\nname: a\ndescription: b\n" + keys(MaxMappingKeys-2) + "---\n", want: Skill{Name: "a", Description: "b"}},
		{name: "body not UTF-8", doc: "---\nname: a\ndescription: b\n---\nok\nla\xe9\n", wantErr: "not UTF-8: an invalid byte on line 6"},
		{name: "binary name not UTF-8", doc: "---\nname: !!binary /w==\ndescription: b\n---\n", wantErr: `field "name" is not UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.doc), "/d")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.want.Name || got.Description != tt.want.Description || got.Markdown != tt.want.Markdown || got.Dir != "/d" {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if got.Metadata["name"] == nil {
				t.Fatalf("metadata lost the front matter: %v", got.Metadata)
			}
		})
	}
}

// keys is n lines "kI: 1" of a YAML mapping.
func keys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("k" + strconv.Itoa(i) + ": 1\n")
	}
	return b.String()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// TestParseErrorLines: every front matter error names its line in the
// SKILL.md, the first line of the front matter (line 2) too, after
// leading blank lines, a BOM and CRLF line ends alike.
func TestParseErrorLines(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"mapping in a value on the first line", "---\nname: a: b\ndescription: c\n---\n", "line 2: mapping values are not allowed"},
		{"bad token on the first line", "---\n@x\n---\n", "line 2: found character that cannot start any token"},
		{"unclosed flow on the first line", "---\nname: [a\ndescription: b\n---\n", "line 2: did not find expected ',' or ']'"},
		{"unknown escape on the first line", "---\nname: \"\\q\"\ndescription: b\n---\n", "line 2: found unknown escape character"},
		{"bad token on a later line", "---\nname: a\ndescription: b\nfoo: @x\n---\n", "line 4: found character that cannot start any token"},
		{"tab on a later line", "---\nname: a\n\tdescription: b\n---\n", "line 3: found a tab character"},
		{"missing dash on a later line", "---\nname: a\nlist:\n  - a\n  b: c\n---\n", "line 4: did not find expected '-' indicator"},
		{"after blank lines, BOM and CRLF", "\xef\xbb\xbf\r\n\r\n---\r\nname: a: b\r\n---\r\n", "line 4: mapping values are not allowed"},
		{"unknown anchor", "---\nname: a\ndescription: *x\n---\n", "line 3: unknown anchor 'x' referenced"},
		{"control character", "---\nname: a\ndescription: b\x01\n---\n", "line 3: control character U+0001"},
		{"duplicate key", "---\nname: a\nname: b\ndescription: c\n---\n", `line 3: mapping key "name" already defined at line 2`},
		{"bad explicit tag", "---\nname: a\ndescription: b\nn: !!int abc\n---\n", "line 4: cannot decode !!str `abc` as a !!int"},
		{"list for a mapping", "---\n- a\n- b\n---\n", "line 2: "},
		{"list as a key", "---\nname: a\ndescription: b\nx:\n  ? [1, 2]\n  : v\n---\n", "line 5: invalid map key"},
		{"mapping as a key", "---\nname: a\ndescription: b\nx: {y: 1}\nz:\n  ? {a: 1}\n  : v\n---\n", "line 6: invalid map key"},
		{"the first in the document", "---\nname: a\ndescription: b\nx:\n  y: {? [1] : v}\n? [2]\n: w\n---\n", "line 5: invalid map key"},
		{"alias of a list as a key", "---\nname: a\ndescription: b\nl: &l [1]\nx:\n  *l : v\n---\n", "line 6: invalid map key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), "/d")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// FuzzParse: any document either parses into a skill with a name and a
// description, or fails with a front matter or UTF-8 error that names
// its line; it never panics.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"---\nname: a\ndescription: b\n---\nbody",
		"\xef\xbb\xbf\r\n---\r\nname: a\r\ndescription: b\r\n---\r\n",
		"---\nname: [a\ndescription: b\n---\n",
		"---\nname: a: b\n---\n",
		"---\na: &x [1, *x]\nname: *y\n---\n",
		"---\nname: !!binary /w==\ndescription: b\n---\n",
		"---\nname: a\ndescription: b\nm: {<<: 1}\n---\n",
		"---\n- a\n---\n",
		"---\nname: \"\\q\"\n---\n",
		"---\nname: a\n\tdescription: b\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := Parse(doc, "/d")
		if err != nil {
			msg := err.Error()
			if strings.HasPrefix(msg, "front matter: invalid YAML: ") && !strings.HasPrefix(msg, "front matter: invalid YAML: line ") {
				t.Fatalf("no line: %v", err)
			}
			return
		}
		if s.Name == "" || s.Description == "" || s.Dir != "/d" {
			t.Fatalf("parsed without a name or description: %+v", s)
		}
	})
}

// TestAliasesBounded: a front matter's aliases may not make it hold many
// times the values written in it. yaml.v3 refuses only past a few
// hundred times (and past 400,000 decoded values): 9 KB of anchors held
// megabytes in Skill.Metadata for the skill's life.
func TestAliasesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\nname: a\ndescription: b\nl0: &l0 [x" + strings.Repeat(", x", 999) + "]\nl1: [*l0")
	b.WriteString(strings.Repeat(", *l0", 94) + "]\n")
	b.WriteString("---\n")
	_, err := Parse([]byte(b.String()), "/d")
	if err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Fatalf("%d bytes of anchors and aliases: err = %v, want the aliases refused", b.Len(), err)
	}
	// Aliases that repeat a little stay fine.
	s, err := Parse([]byte("---\nname: a\ndescription: b\nbase: &b {k: v, w: [1, 2]}\none: *b\ntwo: *b\n---\n"), "/d")
	if err != nil || s.Metadata["two"] == nil {
		t.Fatalf("a few aliases: %v, %v", s, err)
	}
}
