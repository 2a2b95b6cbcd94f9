package skill

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolbus/toolbus/toolkit"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ViewerName is the name of the built-in tool that returns a skill's body.
const ViewerName = toolkit.SkillViewerName

// ViewerDescription is the viewer tool's description (AgentScope 2.x).
const ViewerDescription = "Retrieve a skill within the conversation. " +
	"When users asks you to perform tasks, check if any of the available " +
	"skills match. Skills provide specialized capabilities and domain knowledge."

// ViewerSchema returns the viewer tool's input schema.
func ViewerSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"skill": map[string]any{"type": "string", "description": "The exact name of the skill to view. "},
		},
		"required": []any{"skill"},
	}
}

// Viewer returns the read-only "Skill" tool. It resolves the requested
// skill among those visible to the calling session, whose active groups it
// reads from tk (so it works with any GroupState, the bus's included), and
// returns its markdown body. An unknown or invisible skill ends the call
// with CodeToolError and "SkillNotFoundError: Skill '<name>' not found."
// (the name as valid UTF-8, cut after 256 bytes).
// Register it with Install, or with tk.Add(Viewer(set, tk),
// toolkit.ReadOnly(), toolkit.WithKind(toolkit.KindSkill),
// toolkit.ListedWith(set.GroupsWithSkills)).
func Viewer(set *Set, tk *toolkit.Toolkit) *toolkit.Tool {
	return toolkit.Raw(ViewerName, ViewerDescription, ViewerSchema(),
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			name, _ := call.Input["skill"].(string) // the schema guarantees a string
			shown := shownName(name)
			// A child of the call's span when traces are on (the global
			// provider is then the process's); a no-op otherwise.
			ctx, span := tracer().Start(ctx, "skill.load "+shown, trace.WithAttributes(attribute.String("toolbus.skill.name", shown)))
			defer span.End()
			active, _, err := tk.ActiveGroups(ctx, call.Scope(), call.GroupsRevision)
			if err != nil {
				return toolkit.Errorf(toolkit.CodeUnavailable, "GroupStateError: could not read the active tool groups: %v", err)
			}
			sk, ok := set.Find(name, active)
			if !ok {
				span.SetStatus(codes.Error, "skill not found")
				return toolkit.NewError(toolkit.CodeToolError, fmt.Sprintf("SkillNotFoundError: Skill '%s' not found.", shown))
			}
			span.SetAttributes(attribute.String("toolbus.skill.group", sk.Group), attribute.Int("toolbus.skill.bytes", len(sk.Markdown)))
			return w.Write(toolkit.Text(sk.Markdown))
		})
}

// maxShownName is how much of a skill name the viewer's answers and
// spans quote.
const maxShownName = 256

// shownName is a skill name as the viewer quotes it: the tool is raw, so
// the name is as the caller sent it, and an answer must be UTF-8 (a
// msgpack str) and small. Invalid bytes are shown as U+FFFD, and a long
// name is cut, marked with "…".
func shownName(name string) string {
	if len(name) > maxShownName {
		n := maxShownName
		for n > 0 && !utf8.RuneStart(name[n]) {
			n--
		}
		name = name[:n] + "…"
	}
	return strings.ToValidUTF8(name, "\uFFFD")
}

// tracer records skill loads and fetches in the process's traces: the
// global provider's at the time of use (a tracer taken from it earlier
// stays bound to the first provider ever set).
func tracer() trace.Tracer { return otel.Tracer("github.com/toolbus/toolbus/skill") }

// Install registers the viewer tool in tk (read-only, basic group, listed
// only while a skill of basic or of an active group exists, as in
// AgentScope 2.x) and binds the set to tk's group order. Every group the set uses must exist in
// tk. Call it once, after the groups are added.
func Install(tk *toolkit.Toolkit, set *Set) error {
	if tk == nil || set == nil {
		return fmt.Errorf("skill: Install needs a toolkit and a set")
	}
	groups := tk.Groups()
	for _, g := range set.Groups() {
		if g != toolkit.BasicGroup && !slices.ContainsFunc(groups, func(x toolkit.Group) bool { return x.Name == g }) {
			return fmt.Errorf("skill: the skills' group %q is not a group of the toolkit", g)
		}
	}
	if err := tk.Add(Viewer(set, tk), toolkit.ReadOnly(), toolkit.WithKind(toolkit.KindSkill), toolkit.ListedWith(set.GroupsWithSkills)); err != nil {
		return fmt.Errorf("skill: %w", err)
	}
	set.mu.Lock()
	set.order = func() []string {
		gs := tk.Groups()
		names := make([]string, len(gs))
		for i, g := range gs {
			names[i] = g.Name
		}
		return names
	}
	set.mu.Unlock()
	return nil
}

// Instructions renders the skill prompt for a session of tk: the skills of
// basic and of the session's active groups.
func Instructions(ctx context.Context, tk *toolkit.Toolkit, set *Set, session string, minRevision uint64) (string, error) {
	active, _, err := tk.ActiveGroups(ctx, session, minRevision)
	if err != nil {
		return "", err
	}
	return set.Instructions(active), nil
}
