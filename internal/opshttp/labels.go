package opshttp

import "sync"

// OtherTool labels the calls of tools past ToolLabels' bound, and
// UnknownTool those of names the process does not serve (made up by a
// caller). Neither is a tool name (a token of [A-Za-z0-9_-]), so no tool's
// series is ever one of theirs: tool="_other" is the tool of that name.
const (
	OtherTool   = "<other>"
	UnknownTool = "<unknown>"
)

// ToolLabels bounds the tool names a metric is labelled with. The names
// are ones the fleet serves, but which those are changes over time (an
// MCP server renaming its tools, a worker announcing new ones) and a
// label, once made, stays: past max distinct names, calls of a tool not
// labelled yet are counted under OtherTool.
type ToolLabels struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// MaxToolLabels is the bound of NewToolLabels' labels: well above the tools
// one fleet serves.
const MaxToolLabels = 20_000

// NewToolLabels bounds the tool labels at max distinct names.
func NewToolLabels(max int) *ToolLabels {
	return &ToolLabels{max: max, seen: map[string]struct{}{}}
}

// Label is the label of tool: tool itself while it is one of the first
// max names labelled, else OtherTool.
func (l *ToolLabels) Label(tool string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[tool]; ok {
		return tool
	}
	if len(l.seen) >= l.max {
		return OtherTool
	}
	l.seen[tool] = struct{}{}
	return tool
}

// Labelled reports whether tool has a label of its own already (it is one
// of the first max names labelled).
func (l *ToolLabels) Labelled(tool string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.seen[tool]
	return ok
}
