package permission

import (
	"cmp"
	"fmt"

	"github.com/toolbus/toolbus/toolkit"
)

// Decide runs the decision table for one call (AgentScope 2.x, in this
// order; the first step that decides wins):
//
//	step                  DEFAULT       ACCEPT_EDITS          EXPLORE       BYPASS                 DONT_ASK
//	1 deny rules          DENY          DENY                  DENY          DENY                   DENY
//	2 ask rules           ASK           ASK                   ASK           ASK                    DENY (suggestions kept)
//	3 read-only           ALLOW         ALLOW                 ALLOW         ALLOW                  ALLOW
//	4 tool check          ALLOW/DENY;   same, and edits in    not called    ALLOW/DENY; any ASK    ALLOW/DENY; safety
//	                      safety ASK    working dirs ALLOW                  continues              ASK becomes DENY
//	5 allow rules         ALLOW         ALLOW                 not consulted ALLOW                  ALLOW
//	6 fallback            ASK           ASK                   DENY          ALLOW                  DENY
//
// A rule matches a call when its Tool is the tool's name and its pattern
// is empty or matches (see Rule). For deny and ask rules one matching
// sub-command of a shell line is enough; an allow rule must cover every
// sub-command (so "git status:*" does not allow "git status; rm -rf x").
// Decide does no I/O beyond resolving symbolic links of paths.
func Decide(p Policy, t *toolkit.Tool, input map[string]any) Decision {
	mode := p.Mode.orDefault()
	spec := kinds[KindOf(t)]
	var subjects []subject
	if spec.subjects != nil {
		subjects = spec.subjects(p, input)
	}
	match := spec.match
	if spec.paths {
		// A path pattern is read as the path it names: "~" expanded,
		// relative to the first working directory.
		match = func(pattern, path string) bool { return spec.match(absPattern(pattern, p.WorkingDirs), path) }
	}

	// 1. Deny rules.
	if r := anyRule(p.Rules, Deny, t.Name, match, subjects); r != nil {
		return Decision{Behavior: Deny, Reason: "deny rule", Rule: r,
			Message: fmt.Sprintf("Permission to use %s has been denied by the rule %s.", t.Name, r)}
	}
	// 2. Ask rules.
	if r := anyRule(p.Rules, Ask, t.Name, match, subjects); r != nil {
		d := Decision{Behavior: Ask, Reason: "ask rule", Rule: r, Suggested: suggestions(spec, p, t, input),
			Message: fmt.Sprintf("The rule %s asks for approval before %s runs.", r, t.Name)}
		if mode == ModeDontAsk {
			return dontAsk(d)
		}
		return d
	}
	// 3. Read-only fast path. In DEFAULT mode a read-only MCP tool is not
	// taken on its server's word (readOnlyHint): it asks unless an allow
	// rule matches, as AgentScope's MCP documentation says.
	if spec.readOnly(t, input) && (mode != ModeDefault || KindOf(t) != KindMCP) {
		return Decision{Behavior: Allow, Reason: "read-only", Message: "Read-only operations are auto-allowed."}
	}
	// 4. The tool's own check.
	var toolAsk *Decision
	if mode != ModeExplore {
		d := spec.check(p, t, input)
		switch d.Behavior {
		case Allow, Deny:
			return d
		case Ask:
			if d.Safety {
				switch mode {
				case ModeDefault, ModeAcceptEdits:
					return d
				case ModeDontAsk:
					return dontAsk(d)
				}
			}
			toolAsk = &d
		}
	}
	// 5. Allow rules.
	if mode != ModeExplore {
		if r := allRules(p.Rules, t.Name, match, subjects); r != nil {
			return Decision{Behavior: Allow, Reason: "allow rule", Rule: r,
				Message: fmt.Sprintf("Allowed by the rule %s.", r)}
		}
	}
	// 6. The mode decides.
	switch mode {
	case ModeExplore:
		return Decision{Behavior: Deny, Reason: "mode",
			Message: fmt.Sprintf("Permission denied for %s (explore mode is read-only).", t.Name)}
	case ModeBypass:
		return Decision{Behavior: Allow, Reason: "mode", Message: "Allowed (bypass mode)."}
	case ModeDontAsk:
		return Decision{Behavior: Deny, Reason: "mode", Suggested: suggestions(spec, p, t, input),
			Message: fmt.Sprintf("Permission denied for %s (dont_ask mode - user not available).", t.Name)}
	}
	d := Decision{Behavior: Ask, Reason: "mode", Suggested: suggestions(spec, p, t, input),
		Message: fmt.Sprintf("Permission required for %s.", t.Name)}
	if toolAsk != nil && toolAsk.Message != "" {
		d.Message = toolAsk.Message // the tool's own words, e.g. MCP's
	}
	return d
}

// dontAsk turns an ASK into the DENY of ModeDontAsk, keeping its
// suggestions.
func dontAsk(d Decision) Decision {
	d.Behavior = Deny
	d.Reason += " (dont_ask)"
	d.Message += " Denied: the session is in dont_ask mode and no user is available to approve."
	return d
}

// anyRule returns the first rule with behavior b for the tool that matches
// the call: a name-level rule, or a pattern matching any subject.
func anyRule(rules []Rule, b Behavior, tool string, match func(pattern, subject string) bool, subjects []subject) *Rule {
	for i := range rules {
		r := &rules[i]
		if r.Behavior != b || r.Tool != tool {
			continue
		}
		if r.Pattern == "" {
			return r
		}
		for _, s := range subjects {
			if s.opaque || match(r.Pattern, s.text) {
				return r
			}
		}
	}
	return nil
}

// allRules returns an allow rule that decides the call: a name-level allow
// rule, or (when every subject that is not read-only is matched by some
// allow rule) the rule that matched the first of them.
func allRules(rules []Rule, tool string, match func(pattern, subject string) bool, subjects []subject) *Rule {
	var first *Rule
	for i := range rules {
		r := &rules[i]
		if r.Behavior == Allow && r.Tool == tool && r.Pattern == "" {
			return r
		}
	}
	if len(subjects) == 0 {
		return nil
	}
	for _, s := range subjects {
		if s.readOnly || s.denyOnly {
			continue
		}
		var hit *Rule
		for i := range rules {
			r := &rules[i]
			if r.Behavior != Allow || r.Tool != tool || r.Pattern == "" {
				continue
			}
			if (s.opaque || s.writes) && r.Pattern == "*" ||
				!s.opaque && !s.writes && (match(r.Pattern, cmp.Or(s.allowText, s.text)) || s.outer != "" && namesInner(r.Pattern, s.outer, s.text)) {
				hit = r
				break
			}
		}
		if hit == nil {
			return nil
		}
		if first == nil {
			first = hit
		}
	}
	return first
}

// NeverRuns reports whether the policy denies every call of the tool
// whatever its input: a name-level deny rule, or ModeExplore and a tool
// that can never be read-only. Listings hide such tools.
func NeverRuns(p Policy, t *toolkit.Tool) bool {
	for _, r := range p.Rules {
		if r.Behavior == Deny && r.Tool == t.Name && r.Pattern == "" {
			return true
		}
	}
	if p.Mode.orDefault() == ModeExplore {
		if hasRule(p.Rules, Ask, t.Name) {
			return false // an ask rule precedes the explore denial: approvable
		}
		return !kinds[KindOf(t)].mayReadOnly(t)
	}
	return false
}

func hasRule(rules []Rule, b Behavior, tool string) bool {
	for _, r := range rules {
		if r.Behavior == b && r.Tool == tool {
			return true
		}
	}
	return false
}

// maxSuggestedBytes bounds the patterns of the rules suggested for one
// call: they travel in its final and its pending record, which must fit
// a message (a command's first word may be of any length).
const maxSuggestedBytes = 4 << 10

// suggestions are the rules spec suggests for a call, none when their
// patterns pass maxSuggestedBytes (a one-shot approval fits).
func suggestions(spec kindSpec, p Policy, t *toolkit.Tool, input map[string]any) []Rule {
	rules := spec.suggest(p, t, input)
	n := 0
	for _, r := range rules {
		if n += len(r.Pattern); n > maxSuggestedBytes {
			return nil
		}
	}
	return rules
}
