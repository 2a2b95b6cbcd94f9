package permission

import (
	"fmt"
	"strings"

	"github.com/toolbus/toolbus/toolkit"
)

// Mode is a session's permission mode. The zero value means ModeDefault.
type Mode string

const (
	// ModeDefault asks for everything that is not read-only, allowed by a
	// rule or allowed by the tool's own check.
	ModeDefault Mode = "default"
	// ModeAcceptEdits is ModeDefault plus automatic approval of file edits
	// (and file-system shell commands) inside the working directories.
	ModeAcceptEdits Mode = "accept_edits"
	// ModeExplore is read-only: anything that is not read-only is denied,
	// and allow rules cannot change that.
	ModeExplore Mode = "explore"
	// ModeBypass allows everything that no deny or ask rule stops and that
	// the tool itself does not deny (safety checks included).
	ModeBypass Mode = "bypass"
	// ModeDontAsk is for runs with nobody to ask: every ask becomes a deny.
	ModeDontAsk Mode = "dont_ask"
)

// Modes lists every mode.
var Modes = []Mode{ModeDefault, ModeAcceptEdits, ModeExplore, ModeBypass, ModeDontAsk}

// ParseMode accepts a mode by its name, case-insensitively, with "-" or
// "_" ("accept-edits", "ACCEPT_EDITS"). "" is ModeDefault.
func ParseMode(s string) (Mode, error) {
	norm := Mode(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_"))
	if norm == "" {
		return ModeDefault, nil
	}
	for _, m := range Modes {
		if norm == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("permission: unknown mode %q (want one of default, accept_edits, explore, bypass, dont_ask)", s)
}

func (m Mode) orDefault() Mode {
	if m == "" {
		return ModeDefault
	}
	return m
}

// Behavior is what a rule or a decision says about a call.
type Behavior string

const (
	// Allow runs the call.
	Allow Behavior = "allow"
	// Deny refuses the call (toolkit.CodeDenied).
	Deny Behavior = "deny"
	// Ask needs a human's approval first (toolkit.CodeApprovalRequired).
	Ask Behavior = "ask"
)

// ParseBehavior accepts "allow", "deny" or "ask", case-insensitively.
func ParseBehavior(s string) (Behavior, error) {
	switch b := Behavior(strings.ToLower(strings.TrimSpace(s))); b {
	case Allow, Deny, Ask:
		return b, nil
	}
	return "", fmt.Errorf("permission: unknown behavior %q (want allow, deny or ask)", s)
}

// Rule allows, denies or asks for calls of one tool, by exact name. An
// empty Pattern matches every call of the tool; otherwise the tool's kind
// decides what it is matched against (see the package documentation):
// a command prefix for the shell tool, a path glob for the file tools.
// Other tools only have name-level rules: a pattern never matches them.
type Rule struct {
	Tool     string   `json:"tool" msgpack:"tool"`
	Pattern  string   `json:"pattern,omitempty" msgpack:"pattern,omitempty"`
	Behavior Behavior `json:"behavior" msgpack:"behavior"`
	// Source says where the rule came from ("config", "session",
	// "suggested", ...). Informational.
	Source string `json:"source,omitempty" msgpack:"source,omitempty"`
}

// ParseRule reads a rule written as TOOL or TOOL:PATTERN (the form
// suggestions are shown in, and that a command line takes). The pattern is everything after the
// first colon, so "execute_shell_command:git push:*" has the pattern
// "git push:*".
func ParseRule(spec string, b Behavior) (Rule, error) {
	b, err := ParseBehavior(string(b))
	if err != nil {
		return Rule{}, err
	}
	spec = strings.TrimSpace(spec)
	tool, pattern, hasPattern := strings.Cut(spec, ":")
	if !toolkit.ValidName(tool) {
		return Rule{}, fmt.Errorf("permission: invalid rule %q: the tool name must match [A-Za-z0-9_-]+", spec)
	}
	pattern = strings.TrimSpace(pattern)
	if hasPattern && pattern == "" {
		return Rule{}, fmt.Errorf("permission: invalid rule %q: empty pattern after ':'", spec)
	}
	r := Rule{Tool: tool, Pattern: pattern, Behavior: b}
	if err := r.Validate(); err != nil { // the pattern's bounds
		return Rule{}, err
	}
	return r, nil
}

// String returns the rule as TOOL or TOOL:PATTERN (without its behavior).
func (r Rule) String() string {
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + ":" + r.Pattern
}

// Validate checks a rule's tool name, behavior and pattern. The behavior
// is one of Allow, Deny and Ask exactly: Decide compares it so, and would
// pass over a rule of "Deny".
func (r Rule) Validate() error {
	switch r.Behavior {
	case Allow, Deny, Ask:
	default:
		return fmt.Errorf("permission: invalid rule behavior %q (want %q, %q or %q)", r.Behavior, Allow, Deny, Ask)
	}
	if !toolkit.ValidName(r.Tool) {
		return fmt.Errorf("permission: invalid rule tool name %q", r.Tool)
	}
	if strings.TrimSpace(r.Pattern) != r.Pattern {
		return fmt.Errorf("permission: rule pattern %q has surrounding white space", r.Pattern)
	}
	if n := strings.Count(r.Pattern, "*") + strings.Count(r.Pattern, "?"); n > MaxPatternWildcards {
		return fmt.Errorf("permission: rule pattern %.64q… has %d wildcards, more than %d", r.Pattern, n, MaxPatternWildcards)
	}
	return nil
}

// MaxPatternWildcards is how many wildcards ("*", "?") a rule's pattern
// may hold: a path pattern's cost grows with them times the path's
// length (1365 "**" against a path of 1 MB took 30 s a decision). A
// session policy an earlier build stored with such a rule is refused as
// any stored value this build cannot read: the session's calls end
// unavailable until its policy is set again (subjects.md).
const MaxPatternWildcards = 64

// Policy is everything a decision depends on besides the call: the mode,
// the rules (worker-wide and the session's) and the working directories
// that ModeAcceptEdits trusts and relative paths are resolved against.
type Policy struct {
	Mode        Mode
	Rules       []Rule
	WorkingDirs []string
}

// Decision is the outcome of Decide.
type Decision struct {
	Behavior Behavior
	// Message is written for the model.
	Message string
	// Reason says which step decided, for logs and for the human who
	// approves: "deny rule", "ask rule", "read-only", "tool check",
	// "safety check", "allow rule" or "mode".
	Reason string
	// Rule is the rule that decided, if a rule did.
	Rule *Rule
	// Suggested are rules that would allow this call next time (for ASK,
	// and for a DENY converted from an ASK in ModeDontAsk).
	Suggested []Rule
	// Safety marks a safety check (a dangerous path or command): an allow
	// rule cannot override it; only a one-shot approval (or ModeBypass)
	// lets the call run.
	Safety bool
}
