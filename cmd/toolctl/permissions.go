package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// The permission commands work on the fleet's permission store (the
// toolbus_permissions and toolbus_approvals KV buckets the workers with a
// permissions section share): approve or deny one pending call, add an allow rule
// to a session, set a session's mode.
func init() {
	var a approveOptions
	register(&command{
		name:    "approve",
		args:    "CALL-ID",
		summary: "approve a call that ended approval_required: the same call, re-sent with the same input, then runs once",
		flags:   a.register,
		run:     a.run,
	})
	d := approveOptions{deny: true}
	register(&command{
		name:    "deny",
		args:    "CALL-ID",
		summary: "deny a call that ended approval_required: it is no longer pending, and the same call re-sent with the same input ends denied with --reason",
		flags:   d.register,
		run:     d.run,
	})
	var l allowOptions
	register(&command{
		name:    "allow",
		args:    "TOOL[:PATTERN]...",
		summary: "add allow rules to a session (TOOL, or e.g. execute_shell_command:git status:*); --remove takes them out",
		flags:   l.register,
		run:     l.run,
	})
	var m modeOptions
	register(&command{
		name:    "mode",
		args:    "[MODE]",
		summary: "show, set or unset (--unset) a session's permission mode: default, accept_edits, explore, bypass, dont_ask",
		flags:   m.register,
		run:     m.run,
	})
}

// store opens the fleet's permission store: its buckets as the workers
// created them (toolctl creates none, so the workers' settings decide;
// before any worker with permissions, nothing is set and setting fails);
// cfg nil means both buckets, bound only.
func (e *env) store(ctx context.Context, cfg *permission.KVConfig) (*permission.KVStore, int) {
	nc, err := e.conn()
	if err != nil {
		return nil, exitCode(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl: JetStream:", err)
		return nil, exitError
	}
	if cfg == nil {
		cfg = &permission.KVConfig{BindOnly: true} // the workers create the buckets, with their settings
	}
	st, err := permission.NewKVStore(ctx, js, cfg)
	if errors.Is(context.Cause(ctx), errRefused) {
		return nil, exitUsage // the server refused the bucket to these credentials: run says why
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl: opening the permission store:", err)
		return nil, exitError
	}
	return st, exitOK
}

// guard is a Guard over the fleet's store, for the operations that do not
// depend on a worker's defaults: approving, adding rules, setting modes.
func (e *env) guard(ctx context.Context) (*permission.Guard, int) {
	st, code := e.store(ctx, nil)
	if st == nil {
		return nil, code
	}
	g, err := permission.NewGuard(st, nil)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return nil, exitError
	}
	return g, exitOK
}

// sessionFlags are the --session and --caller flags of the permission
// commands: a session is a caller identity's session, the connection's
// own (--identity) unless --caller names another (an operator's choice).
type sessionFlags struct {
	session, caller string
	given           bool // --session was on the command line, "" too
}

func (f *sessionFlags) register(fs *flag.FlagSet, what string) {
	f.session, f.given = "", false // as StringVar sets its default
	fs.Var((*sessionFlag)(f), "session", what)
	fs.StringVar(&f.caller, "caller", "", "the caller `identity` whose session it is (default --identity; an operator names others')")
}

// sessionFlag is --session, noting that it was given.
type sessionFlag sessionFlags

func (f *sessionFlag) String() string { return f.session }

func (f *sessionFlag) Set(v string) error {
	f.session, f.given = v, true
	return nil
}

// scope is the session scope the flags name ("" without --session).
func (f *sessionFlags) scope(e *env) string {
	if f.session == "" {
		return ""
	}
	caller := f.caller
	if caller == "" {
		caller = e.cfg.NATS.Identity
	}
	return toolkit.SessionScope(caller, f.session)
}

// checkCaller refuses a --caller that no caller identity can be (the
// command would act on a session nobody has), and --caller without
// --session, which scope would ignore: the command would then act on
// every session, not the caller's.
func (f *sessionFlags) checkCaller(e *env) (int, bool) {
	switch {
	case f.caller == "":
		return exitOK, false
	case !wire.ValidIdentity(f.caller):
		return e.usagef("invalid caller identity %s: it must be 1-%d characters of [A-Za-z0-9_-] (the caller role's name)", wire.Quote(f.caller), wire.MaxCallIDLen), true
	case f.session == "":
		return e.usagef("--caller names whose session it is: give --session too (--caller %s --session SESSION)", plain(f.caller)), true
	}
	return exitOK, false
}

// scopeName prints a session scope: "identity/session", or the session
// alone when it is anonymous. The session name is the caller's: one with
// characters that are not printable (terminal controls, bidi overrides)
// is printed Go-quoted.
func scopeName(scope string) string {
	id, session := toolkit.SplitScope(scope)
	session = plain(session)
	if id != "" {
		return id + "/" + session
	}
	return session
}

// plain prints a text a caller or the fleet may have written (a session
// name, a rule made from a caller's command, a worker id, a final's
// state): as it is, or Go-quoted when it has characters that are not
// printable (terminal controls, newlines, tabs, bidi overrides) or bytes
// that are not UTF-8.
func plain(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// printableText is a fleet's text of several lines (a group's
// instructions, the <agent-skills> prompt) for the terminal: its line
// breaks and tabs as they are, every other unprintable character
// (terminal controls, a carriage return, bidi overrides) and every byte
// that is not UTF-8 Go-escaped as plain escapes them (\x9b), so that the
// text reads as it was meant and cannot drive the operator's terminal.
// --json prints such text exact (\u-escaped).
func printableText(s string) string {
	bad := func(r rune) bool { return r != '\n' && r != '\t' && !unicode.IsPrint(r) }
	if utf8.ValidString(s) && strings.IndexFunc(s, bad) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case bad(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// printableJSON is a JSON text with the characters that are not
// printable (C1 controls, DEL, bidi overrides; JSON escapes only C0)
// written as \u escapes, so that a caller's input cannot drive the
// operator's terminal; it reads as the same JSON value.
func printableJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsPrint(r) || r == ' ':
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// shellQuote quotes s as one shell word for a command to paste: as it is
// when made of safe characters, in single quotes when printable, else in
// bash's $'…' with the unprintable characters escaped (so none reaches
// the terminal).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x80 && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// approveOptions are approve's, and deny's (deny true).
type approveOptions struct {
	sessionFlags
	by     string
	deny   bool
	reason string
}

func (o *approveOptions) register(fs *flag.FlagSet) {
	o.sessionFlags.register(fs, "`session` of the call (needed only when several sessions have a pending call with that id)")
	if !o.deny {
		fs.StringVar(&o.by, "by", "", "the `name` of who approves, for the workers' logs (default the user name)")
		return
	}
	fs.StringVar(&o.by, "by", "", "the `name` of who denies, for the workers' logs (default the user name)")
	fs.StringVar(&o.reason, "reason", "", "why, in a `text` the agent's model reads when it sends the call again")
}

func (o *approveOptions) run(ctx context.Context, e *env, args []string) int {
	verb, done := "approve", "approved"
	if o.deny {
		verb, done = "deny", "denied"
	}
	if len(args) != 1 {
		return e.usagef("%s takes one call id: toolctl %s CALL-ID (the id is in the approval_required final)", verb, verb)
	}
	id := args[0]
	if id == "" {
		return e.usagef("the call id is empty")
	}
	if !wire.ValidCallID(id) {
		return e.badCallID(id)
	}
	if o.given && o.session == "" {
		// Most often an unset variable (--session "$S"): read as no
		// --session, it would settle the call of any session.
		return e.usagef("--session is empty: name the call's session, or leave --session out to find the call in any session")
	}
	if code, refused := o.checkCaller(e); refused {
		return code
	}
	if len(o.reason) > permission.MaxDenyReason {
		return e.usagef("--reason is %d bytes: at most %d", len(o.reason), permission.MaxDenyReason)
	}
	by := o.by
	if by == "" {
		by = os.Getenv("USER")
		if u, err := user.Current(); by == "" && err == nil {
			by = u.Username
		}
	}
	g, code := e.guard(ctx)
	if g == nil {
		return code
	}
	scope := o.scope(e)
	pending, err := g.Pending(ctx, scope, id)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	var a permission.Approval
	if o.deny {
		a, err = g.Deny(ctx, scope, id, by, o.reason)
	} else {
		a, err = g.Approve(ctx, scope, id, by)
	}
	switch {
	case errors.Is(err, permission.ErrNoPending):
		where := ""
		if o.session != "" {
			where = " in session " + scopeName(scope)
		}
		fmt.Fprintf(e.stderr, "toolctl: no call %q is waiting for approval%s (never asked, expired, or already approved or denied)\n", id, where)
		return exitError
	case errors.Is(err, permission.ErrAmbiguous):
		var sessions []string
		how := "--session"
		for _, p := range pending {
			sessions = append(sessions, scopeName(p.Session))
			if caller, _ := toolkit.SplitScope(p.Session); caller != "" {
				// --session alone names a session of --identity's.
				how = "--session, and --caller for a caller identity's (IDENTITY/SESSION above: --caller IDENTITY --session SESSION)"
			}
		}
		fmt.Fprintf(e.stderr, "toolctl: calls with id %q wait in several sessions (%s): name one with %s\n", id, strings.Join(sessions, ", "), how)
		return exitUsage
	case err != nil:
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	input := ""
	for _, p := range pending {
		if p.Session == a.Session {
			input = p.Input
		}
	}
	fmt.Fprintf(e.stdout, "%s call %s %s: %s %s\n", done, a.CallID, ofSession(a.Session), plain(a.Tool), printableJSON(input))
	if o.deny {
		fmt.Fprintf(e.stdout, "re-sent with this input (%s) it ends denied, and does not ask again\n", a.Digest)
	} else {
		fmt.Fprintf(e.stdout, "it runs once when re-sent with this input (%s)\n", a.Digest)
	}
	return exitOK
}

// ofSession names a call's session scope in a sentence: "of session
// S" ("of session IDENTITY/S" for a caller's), or "without a session"
// ("of caller IDENTITY, without a session") for a call sent without one.
func ofSession(scope string) string {
	switch id, session := toolkit.SplitScope(scope); {
	case session != "":
		return "of session " + scopeName(scope)
	case id != "":
		return "of caller " + id + ", without a session"
	}
	return "without a session"
}

type allowOptions struct {
	sessionFlags
	remove bool
}

func (o *allowOptions) register(fs *flag.FlagSet) {
	o.sessionFlags.register(fs, "`session` the rules apply to (required)")
	fs.BoolVar(&o.remove, "remove", false, "take the rules out of the session instead (as written when added)")
}

func (o *allowOptions) run(ctx context.Context, e *env, args []string) int {
	if o.session == "" {
		return e.usagef("allow needs --session SESSION")
	}
	if code, refused := o.checkCaller(e); refused {
		return code
	}
	if len(args) == 0 {
		return e.usagef("allow takes one or more rules: toolctl allow --session S TOOL[:PATTERN]...")
	}
	var tools []string
	for _, spec := range args {
		r, err := permission.ParseRule(spec, permission.Allow)
		if err != nil {
			return e.usagef("%v", err)
		}
		if !slices.Contains(tools, r.Tool) {
			tools = append(tools, r.Tool)
		}
	}
	g, code := e.guard(ctx)
	if g == nil {
		return code
	}
	if o.remove {
		return o.removeRules(ctx, e, g, args)
	}
	for _, spec := range args {
		if err := g.Allow(ctx, o.scope(e), spec); err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "session %s: allow %s\n", scopeName(o.scope(e)), plain(spec))
	}
	e.warnUnserved(ctx, tools)
	return exitOK
}

// removeRules takes each rule out of the session; one the session does
// not have is said so (exit 1), the others removed still.
func (o *allowOptions) removeRules(ctx context.Context, e *env, g *permission.Guard, specs []string) int {
	code := exitOK
	for _, spec := range specs {
		r, _ := permission.ParseRule(spec, permission.Allow) // parsed before
		removed, err := g.RemoveRule(ctx, o.scope(e), r)
		switch {
		case err != nil:
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		case removed:
			fmt.Fprintf(e.stdout, "session %s: removed allow %s\n", scopeName(o.scope(e)), plain(spec))
		default:
			fmt.Fprintf(e.stderr, "toolctl: session %s has no rule allow %s (toolctl mode --session %s lists its rules)\n", scopeName(o.scope(e)), plain(spec), plain(o.session))
			code = exitError
		}
	}
	return code
}

// warnUnserved says which of the tools no live worker serves, with the
// fleet's tool of the nearest name: a rule for one (a typo, most often)
// is stored, since the tool may come later, but matches nothing until then.
func (e *env) warnUnserved(ctx context.Context, tools []string) {
	nc, err := e.conn()
	if err != nil {
		return
	}
	c, err := bus.NewClient(nc, &bus.ClientOptions{Identity: e.cfg.NATS.Identity})
	if err != nil {
		return
	}
	defer c.Close()
	fleet, err := c.Fleet(ctx)
	if err != nil || len(fleet.Instances()) == 0 {
		return
	}
	for _, name := range tools {
		if _, ok := fleet.ToolInfo(name); ok {
			continue
		}
		if near := nearestTool(fleet, name); near != "" {
			fmt.Fprintf(e.stderr, "toolctl: no worker serves %s now: did you mean %s? (the rule is stored; it applies once a worker serves %s)\n", plain(name), near, plain(name))
		} else {
			fmt.Fprintf(e.stderr, "toolctl: no worker serves %s now (the rule is stored; it applies once a worker serves %s; toolctl tools lists the fleet's tools)\n", plain(name), plain(name))
		}
	}
}

type modeOptions struct {
	sessionFlags
	unset bool
}

func (o *modeOptions) register(fs *flag.FlagSet) {
	o.sessionFlags.register(fs, "`session` whose mode to show, set or unset (required)")
	fs.BoolVar(&o.unset, "unset", false, "unset the session's mode: each worker's default mode (permissions.mode) applies to it again; its rules stay")
}

func (o *modeOptions) run(ctx context.Context, e *env, args []string) int {
	if o.session == "" {
		return e.usagef("mode needs --session SESSION")
	}
	if code, refused := o.checkCaller(e); refused {
		return code
	}
	if len(args) > 1 {
		return e.usagef("mode takes at most one mode: default, accept_edits, explore, bypass or dont_ask")
	}
	if o.unset && len(args) == 1 {
		return e.usagef("mode takes a mode or --unset, not both")
	}
	var mode permission.Mode
	if len(args) == 1 {
		var err error
		if mode, err = permission.ParseMode(args[0]); err != nil || args[0] == "" {
			return e.usagef("unknown mode %q: want default, accept_edits, explore, bypass or dont_ask", args[0])
		}
	}
	var st permission.Store
	if len(args) == 1 || o.unset {
		g, code := e.guard(ctx)
		if g == nil {
			return code
		}
		if err := g.SetMode(ctx, o.scope(e), mode); err != nil { // "" with --unset
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		st = g.Store()
	} else {
		// Showing reads the policy alone, which a caller may read of its
		// own sessions (the approvals bucket it may not).
		kv, code := e.store(ctx, &permission.KVConfig{BindOnly: true, PoliciesOnly: true, Identity: e.cfg.NATS.Identity})
		if kv == nil {
			return code
		}
		st = kv
	}
	sp, _, err := st.LoadSession(ctx, o.scope(e))
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	if sp.Mode == "" {
		fmt.Fprintf(e.stdout, "session %s: mode not set (each worker's default mode applies)\n", scopeName(o.scope(e)))
	} else {
		fmt.Fprintf(e.stdout, "session %s: mode %s\n", scopeName(o.scope(e)), sp.Mode)
	}
	for _, r := range sp.Rules {
		fmt.Fprintf(e.stdout, "  %s %s (%s)\n", r.Behavior, plain(r.String()), plain(r.Source))
	}
	return exitOK
}

// approvalHint tells the human how to let an approval_required call run.
func approvalHint(e *env, session string, final *toolkit.Response) {
	// The operator runs it with a key of their own: name the caller
	// identity whose session it is, or it would be the anonymous one.
	caller := ""
	if id := e.cfg.NATS.Identity; id != "" {
		caller = " --caller " + shellQuote(id)
	}
	if key, ok := final.Metadata[permission.MetaApprovalKey].(string); ok && key != "" {
		// Bound to the session: without it approve takes the id pending in
		// any session, another's where this call was not recorded.
		where := ""
		if session != "" {
			where = caller + " --session " + shellQuote(session)
		}
		fmt.Fprintf(e.stderr, "toolctl: to run it once, approve it with: toolctl approve%s %s, then send the same call again (--id %s)\n", where, shellQuote(key), shellQuote(key))
		fmt.Fprintf(e.stderr, "toolctl: or refuse it: toolctl deny%s %s --reason TEXT (sent again, it ends denied)\n", where, shellQuote(key))
	}
	var rules []string
	switch r := final.Metadata[permission.MetaSuggestedRules].(type) {
	case []string:
		rules = r
	case []any:
		for _, v := range r {
			if s, ok := v.(string); ok {
				rules = append(rules, s)
			}
		}
	}
	if len(rules) > 0 && session != "" {
		for i, r := range rules {
			rules[i] = shellQuote(r)
		}
		fmt.Fprintf(e.stderr, "toolctl: or allow it for the session: toolctl allow%s --session %s %s\n", caller, shellQuote(session), strings.Join(rules, " "))
	}
}
