package toolkit

import (
	"cmp"
	"context"
	"slices"
)

// Catalog is what a toolkit, or a whole fleet of them, offers a model:
// the non-basic groups and every tool's schema with its group, in order.
// Toolkit.Catalog returns a toolkit's; a fleet's view builds its own from
// the workers' announcements. Both list schemas with the same Schemas.
type Catalog struct {
	Groups []Group
	Tools  []CatalogTool
}

// CatalogTool is one tool of a Catalog: its group and its schema as the
// model sees it.
type CatalogTool struct {
	Group  string
	Schema FunctionSchema
	// Conditional says the tool is listed only while one of ListedWith
	// is basic or active (option ListedWith); a fleet's tool is
	// conditional when every worker announces it so, with the union of
	// their groups.
	Conditional bool
	ListedWith  []string
}

// listed reports whether t is listed for a session with the active groups.
func (t *CatalogTool) listed(active []string) bool {
	if t.Group != BasicGroup && t.Group != "" && !slices.Contains(active, t.Group) {
		return false
	}
	if !t.Conditional {
		return true
	}
	return slices.ContainsFunc(t.ListedWith, func(g string) bool { return g == BasicGroup || slices.Contains(active, g) })
}

// Schemas lists what a session with the given active groups sees, in
// AgentScope 2.x's order: the skill viewer first (SkillViewerName, when
// the catalog has it and lists it), then reset_tools when there are non-basic groups
// (its schema lists every group with its description and whether it is
// active), then the basic group's tools and then each active group's, in
// the groups' order, each group's tools in catalog order; a Conditional
// tool only while one of its ListedWith is basic or active. The schemas
// are copies the caller may change.
func (c *Catalog) Schemas(active []string) []FunctionSchema {
	out := make([]FunctionSchema, 0, len(c.Tools)+1)
	add := func(t *CatalogTool) {
		fs := t.Schema
		fs.Function.Parameters = cloneJSON(fs.Function.Parameters).(map[string]any)
		out = append(out, fs)
	}
	viewer := slices.IndexFunc(c.Tools, func(t CatalogTool) bool { return t.Schema.Function.Name == SkillViewerName })
	if viewer >= 0 && c.Tools[viewer].listed(active) {
		add(&c.Tools[viewer])
	}
	if len(c.Groups) > 0 {
		out = append(out, MetaSchema(c.Groups, active))
	}
	// Group by group, as 2.x walks its groups: basic, then the groups
	// in their order (a tool of a group the catalog does not name
	// last), each group's tools in catalog order.
	rank := make(map[string]int, len(c.Groups)+2)
	rank[""], rank[BasicGroup] = 0, 0
	for i, g := range c.Groups {
		if _, dup := rank[g.Name]; !dup {
			rank[g.Name] = i + 1
		}
	}
	groupRank := func(g string) int {
		if r, ok := rank[g]; ok {
			return r
		}
		return len(c.Groups) + 1
	}
	listed := make([]int, 0, len(c.Tools))
	sorted := true
	for i := range c.Tools {
		if i != viewer && c.Tools[i].listed(active) {
			if n := len(listed); n > 0 && groupRank(c.Tools[listed[n-1]].Group) > groupRank(c.Tools[i].Group) {
				sorted = false
			}
			listed = append(listed, i)
		}
	}
	if !sorted {
		slices.SortStableFunc(listed, func(a, b int) int {
			return cmp.Compare(groupRank(c.Tools[a].Group), groupRank(c.Tools[b].Group))
		})
	}
	for _, i := range listed {
		add(&c.Tools[i])
	}
	return out
}

// DefaultGroups names the groups active for a session without stored
// state: those registered Active.
func DefaultGroups(groups []Group) []string {
	var out []string
	for _, g := range groups {
		if g.Active {
			out = append(out, g.Name)
		}
	}
	return out
}

// MetaSchema is reset_tools' schema for the groups, marking the active
// ones in its description and in each group's.
func MetaSchema(groups []Group, active []string) FunctionSchema {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name
	}
	return FunctionSchema{Type: "function", Function: Function{
		Name: MetaToolName, Description: metaDescription(groups, active), Parameters: metaSchema(groups, active),
		Order: []KeyOrder{{Path: "/properties", Keys: names}}, // registration order
	}}
}

// LoadActive reads a session's active groups from state (at least
// minRevision) and the state's revision; a session without stored state
// has DefaultGroups(groups). The list is never nil: no active group is an
// empty list (callers such as skill.Set.Instructions read nil as "every
// group").
func LoadActive(ctx context.Context, state GroupState, groups []Group, session string, minRevision uint64) ([]string, uint64, error) {
	active, rev, ok, err := state.Load(ctx, session, minRevision)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		active = DefaultGroups(groups)
	}
	if active == nil {
		active = []string{}
	}
	return active, rev, nil
}
