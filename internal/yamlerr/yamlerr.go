// Package yamlerr knows how gopkg.in/yaml.v3 (v3.0.1, the version go.mod
// pins) numbers the lines of its syntax errors: its parser's from 0 (and
// none at all on the first line), its scanner's from 1. The config and
// SKILL.md readers use it to name the line in the file; their tests fail
// should an upgrade change yaml.v3's wording or numbering.
package yamlerr

// parserProblems are the reasons of yaml.v3's parser errors.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected key":              true,
	"did not find expected '-' indicator":    true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found duplicate %TAG directive":         true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// FromZero reports whether yaml.v3 numbers the line of a syntax error
// with this reason (the text after "yaml: line N: ") from 0.
func FromZero(reason string) bool { return parserProblems[reason] }
