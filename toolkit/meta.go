package toolkit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MetaToolName is the name of the built-in tool that sets a session's
// active groups. It exists whenever the toolkit has non-basic groups.
const MetaToolName = "reset_tools"

// SkillViewerName is the name of the built-in tool that returns a skill's
// body (package skill's viewer). AgentScope 2.x lists it first, before
// reset_tools (Catalog.Schemas).
const SkillViewerName = "Skill"

// MetaToolDescription is reset_tools' description (AgentScope 2.x).
const MetaToolDescription = "This tool allows you to reset your equipped tools based on your " +
	"current task requirements. These tools are organized into different " +
	"groups, and you can activate/deactivate them by specifying the " +
	"boolean values for each group in the input.\n\n" +
	"**Important: The input booleans are the final state of their " +
	"corresponding tool groups, not incremental changes.** Any group not " +
	"explicitly set to True will be deactivated, regardless of its " +
	"previous state.\n\n" +
	"**Best practice**: Actively manage your tool groups——activate only " +
	"what you need for the current task, and promptly deactivate groups " +
	"as soon as they are no longer needed to conserve context space.\n\n" +
	"This tool will return the usage instructions for the activated tool " +
	"groups, which you **MUST pay attention to and follow**. You can " +
	"also reuse this tool to re-check the instructions."

// DefaultMetaResponseTemplate renders reset_tools' answer exactly as
// AgentScope 2.x's default Jinja template does. Groups with empty
// instructions are left out of the <tool-instructions> block, and the
// block is left out when no activated group has instructions.
const DefaultMetaResponseTemplate = `{{if not .Groups}}All tool groups are currently deactivated.{{else}}The currently activated tool group(s): {{.Names}}.{{if .WithInstructions}}
<tool-instructions>
The tool instructions are a collection of suggestions, rules and notifications about how to use the tools in the activated groups.
{{range .Groups}}{{if .Instructions}}<group name="{{.Name}}">{{.Instructions}}</group>{{end}}{{end}}
</tool-instructions>{{end}}{{end}}`

// MetaResponse is the data a reset_tools response template receives.
type MetaResponse struct {
	Groups []Group // activated, in toolkit order
}

// Names joins the activated group names with ", ".
func (m MetaResponse) Names() string {
	names := make([]string, len(m.Groups))
	for i, g := range m.Groups {
		names[i] = g.Name
	}
	return strings.Join(names, ", ")
}

// WithInstructions reports whether any activated group has instructions.
func (m MetaResponse) WithInstructions() bool {
	return slices.ContainsFunc(m.Groups, func(g Group) bool { return g.Instructions != "" })
}

// metaSchema lists every non-basic group as a boolean property with its
// description, and marks which ones are active now, so the model can see
// the current state (AgentScope #2413, agentscope-java #210).
func metaSchema(groups []Group, active []string) map[string]any {
	props := make(map[string]any, len(groups))
	for _, g := range groups {
		state := "currently inactive"
		if slices.Contains(active, g.Name) {
			state = "currently active"
		}
		props[g.Name] = map[string]any{
			"type":        "boolean",
			"description": fmt.Sprintf("%s (%s)", g.Description, state),
			"default":     false,
		}
	}
	return map[string]any{"type": "object", "properties": props}
}

func metaDescription(groups []Group, active []string) string {
	var on []string
	for _, g := range groups {
		if slices.Contains(active, g.Name) {
			on = append(on, g.Name)
		}
	}
	now := "none"
	if len(on) > 0 {
		now = strings.Join(on, ", ")
	}
	return MetaToolDescription + "\n\nCurrently active groups: " + now + "."
}

// metaEntry builds the reset_tools entry for a registry snapshot.
func (tk *Toolkit) metaEntry(reg *registry) *entry {
	t := &Tool{
		Name:        MetaToolName,
		Description: MetaToolDescription,
		InputSchema: metaSchema(reg.groups, nil),
		group:       BasicGroup,
		kind:        KindMeta,
		idempotency: Idempotent,
	}
	t.run = func(ctx context.Context, call *Call, w Writer) error {
		return tk.resetTools(ctx, call, w)
	}
	t.Handler = marked(t.run)
	// No validator: unknown names and non-booleans get AgentScope's own
	// messages below.
	// unlessEnded, as every tool: a call whose context ended before it
	// runs changes no session's groups.
	return &entry{tool: t, schema: t.InputSchema, handler: Chain(unlessEnded(t.run), reg.middleware...)}
}

func (tk *Toolkit) resetTools(ctx context.Context, call *Call, w Writer) error {
	reg := tk.reg.Load()
	// The order the model wrote the names in, when its text is there
	// (ToolCall.RawInput) or its decoder read it (InputKeys): AgentScope
	// reads them in that order. A decoded object has none.
	var at map[string]int
	keys, lits := rawFields(call.RawInput)
	if call.RawInput == "" {
		keys = call.InputKeys
	}
	if len(keys) > 0 {
		at = make(map[string]int, len(keys))
		for i, k := range keys {
			if _, dup := at[k]; !dup {
				at[k] = i
			}
		}
	}
	groups := reg.groups
	unknown := unknownGroups(groups, call.Input)
	if fleet, _ := ctx.Value(fleetGroupsKey{}).(func(context.Context) []Group); len(unknown) > 0 && fleet != nil {
		// A name this toolkit lacks may be another worker's group: the
		// fleet's count as well (and its descriptions and instructions).
		groups = withFleetGroups(groups, fleet(ctx))
		if ctx.Err() != nil {
			// Its ctx ended while it waited for them (a fleet view
			// starting): the caller gave up, and a name the groups
			// did not reach in time is no bad name.
			return ContextError(ctx)
		}
		unknown = unknownGroups(groups, call.Input)
	}
	if len(unknown) > 0 {
		// In the order the model wrote them; without it, sorted.
		slices.Sort(unknown)
		if at != nil {
			slices.SortStableFunc(unknown, func(a, b string) int { return cmp.Compare(at[a], at[b]) })
		}
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = g.Name
		}
		return Errorf(CodeInvalidInput, "Invalid group name(s): %s. The current available groups are: %s",
			strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	// The first value that is not a bool, in the order the model wrote
	// them; without it, in group order, so the message is stable.
	given := make([]string, 0, len(call.Input))
	for _, g := range groups {
		if _, ok := call.Input[g.Name]; ok {
			given = append(given, g.Name)
		}
	}
	if at != nil {
		slices.SortStableFunc(given, func(a, b string) int { return cmp.Compare(at[a], at[b]) })
	}
	for _, name := range given {
		if v := call.Input[name]; !isBool(v) {
			// AgentScope names the Python type; this is the type
			// json.loads gives the same JSON value (as the model
			// wrote it, when its text is there: 1.0 is a float).
			typ := pyTypeOf(v, lits[name])
			if _, f := v.(float64); f && call.RawInput == "" && slices.Contains(call.InputFloats, name) {
				typ = "<class 'float'>" // whole, but sent as a float
			}
			return Errorf(CodeInvalidInput, "Invalid arguments: the argument '%s' should be a bool value, but got %s.", name, typ)
		}
	}
	var activated []Group
	var names []string
	for _, g := range groups {
		if on, _ := call.Input[g.Name].(bool); on {
			activated = append(activated, g)
			names = append(names, g.Name)
		}
	}
	rev, err := tk.state.Store(ctx, call.Scope(), names)
	if errors.Is(err, ErrInvalidSession) {
		return Errorf(CodeInvalidInput, "BadRequestError: %v", err)
	}
	if err != nil {
		return Errorf(CodeUnavailable, "GroupStateError: could not store the active tool groups: %v", err)
	}
	var b strings.Builder
	if err := tk.metaTmpl.Execute(&b, MetaResponse{Groups: activated}); err != nil {
		return Errorf(CodeInternal, "InternalError: rendering the reset_tools response: %v", err)
	}
	c := Text(b.String())
	c.Metadata = map[string]any{MetaActiveGroups: names, MetaGroupsRevision: rev}
	if names == nil {
		c.Metadata[MetaActiveGroups] = []string{}
	}
	return w.Write(c)
}

// unknownGroups are the keys of in that name none of groups.
func unknownGroups(groups []Group, in map[string]any) []string {
	var unknown []string
	for k := range in {
		if !slices.ContainsFunc(groups, func(g Group) bool { return g.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	return unknown
}

// WithFleetGroups returns ctx carrying groups, which returns the groups
// of the fleet the toolkit serves in (every worker's, as a transport's
// fleet view has them): a reset_tools call dispatched with ctx asks it
// only when it names a group the toolkit lacks, and takes such a name
// when the fleet has it (see the package doc, Groups). A transport sets
// it, for reset_tools calls alone; groups must be cheap to call again (a
// view kept, not a request to the fleet each time), and return once ctx
// ends: a call whose ctx ended by the time groups returned ends with
// ContextError, whatever groups returned, rather than judging its names
// against groups it may not have had in time.
func WithFleetGroups(ctx context.Context, groups func(context.Context) []Group) context.Context {
	return context.WithValue(ctx, fleetGroupsKey{}, groups)
}

type fleetGroupsKey struct{}

// withFleetGroups is own, then the groups of fleet it lacks, in the
// fleet's order (basic is no group to set, as in own).
func withFleetGroups(own, fleet []Group) []Group {
	all := slices.Clone(own)
	for _, g := range fleet {
		if g.Name != BasicGroup && !slices.ContainsFunc(all, func(x Group) bool { return x.Name == g.Name }) {
			all = append(all, g)
		}
	}
	return all
}

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

// Metadata keys of reset_tools' response. Transports read
// MetaGroupsRevision and send it as ToolCall.GroupsRevision with the
// session's later calls.
const (
	MetaActiveGroups   = "active_groups"
	MetaGroupsRevision = "groups_revision"
)

// ActivatedInstructions is AgentScope 1.x's get_activated_notes: for each
// group of groups (in their order) that is active and has instructions,
// "## About Tool Group '<name>'" and its instructions on the next line,
// joined by newlines; "" when there are none. It goes in the system
// prompt, next to the skill instructions.
func ActivatedInstructions(groups []Group, active []string) string {
	var parts []string
	for _, g := range groups {
		if g.Instructions != "" && slices.Contains(active, g.Name) {
			parts = append(parts, fmt.Sprintf("## About Tool Group '%s'\n%s", g.Name, g.Instructions))
		}
	}
	return strings.Join(parts, "\n")
}

// Instructions returns the instructions of a session's active groups
// (ActivatedInstructions), reading the session's groups at least at
// minRevision.
func (tk *Toolkit) Instructions(ctx context.Context, session string, minRevision uint64) (string, error) {
	reg := tk.reg.Load()
	active, _, err := LoadActive(ctx, tk.state, reg.groups, session, minRevision)
	if err != nil {
		return "", err
	}
	return ActivatedInstructions(reg.groups, active), nil
}
