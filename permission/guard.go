package permission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Options configure a Guard. A nil *Options means the defaults.
type Options struct {
	// Mode is the mode of sessions that have not set one; "" means
	// ModeDefault.
	Mode Mode
	// Rules apply to every session (from the worker's configuration),
	// alongside each session's own rules.
	Rules []Rule
	// WorkingDirs are trusted by ModeAcceptEdits; relative file paths are
	// resolved against the first.
	WorkingDirs []string
	// ApprovalTTL: an approval older than this is ignored, and a pending
	// call is no longer listed nor approvable; 0 means what the store
	// keeps (KVStore.ApprovalTTL), else DefaultApprovalTTL. Ages are on
	// the store's clock (a KVStore's server's; see the package doc), on
	// Now for a MemoryStore.
	ApprovalTTL time.Duration
	// CheckTimeout bounds a call's whole permission check (its policy,
	// its approval and the approval's use, the record of its ask) when
	// the call's context has no earlier deadline; 0 means
	// DefaultCheckTimeout, negative is an error. Past it the call ends
	// with toolkit.CodeUnavailable, saying the permission state is
	// unreachable, and does not run: a store that cannot answer (a
	// KVStore's cluster without a leader) does not hold the call, and
	// its worker slot, for as long as that lasts. A MemoryStore answers
	// at once: its checks have no bound of their own.
	CheckTimeout time.Duration
	// Logger receives approvals used and store failures; nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultCheckTimeout bounds a call's permission check when
// Options.CheckTimeout is 0: long enough to ride out a JetStream
// election, short enough that an outage does not hold worker slots.
const DefaultCheckTimeout = 30 * time.Second

// Guard decides, per session, who may run what: it reads the session's
// mode and rules from a Store, runs Decide, and handles one-shot approvals.
// Its Middleware enforces the decisions on a Toolkit; its other methods
// are what an operator's client calls (set a mode, add a rule, approve a
// call). A Guard is safe for concurrent use; every worker of a fleet
// builds its own over the same KVStore.
type Guard struct {
	store Store
	opts  Options
	// bounded: the store may wait (not a MemoryStore, which answers at
	// once), so a check is bounded by opts.CheckTimeout.
	bounded bool
}

// NewGuard returns a Guard over store (nil means a new MemoryStore). It
// rejects an unknown mode or an invalid rule.
func NewGuard(store Store, opts *Options) (*Guard, error) {
	if store == nil {
		store = NewMemoryStore()
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	m, err := ParseMode(string(o.Mode))
	if err != nil {
		return nil, err
	}
	o.Mode = m
	for _, r := range o.Rules {
		if err := r.Validate(); err != nil {
			return nil, err
		}
	}
	switch {
	case o.CheckTimeout < 0:
		return nil, fmt.Errorf("permission: negative check timeout %v", o.CheckTimeout)
	case o.CheckTimeout == 0:
		o.CheckTimeout = DefaultCheckTimeout
	}
	o.Rules = slices.Clone(o.Rules)
	o.WorkingDirs = slices.Clone(o.WorkingDirs)
	if o.ApprovalTTL == 0 {
		o.ApprovalTTL = DefaultApprovalTTL
		if s, ok := store.(interface{ ApprovalTTL() time.Duration }); ok && s.ApprovalTTL() > 0 {
			o.ApprovalTTL = s.ApprovalTTL() // what the store keeps
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	_, atOnce := store.(*MemoryStore)
	return &Guard{store: store, opts: o, bounded: !atOnce}, nil
}

// Store returns the guard's store.
func (g *Guard) Store() Store { return g.store }

// Policy returns the effective policy of a session: its mode (or the
// default), the worker-wide rules then the session's, and the working
// directories.
func (g *Guard) Policy(ctx context.Context, session string) (Policy, error) {
	sp, _, err := g.store.LoadSession(ctx, session)
	if err != nil {
		return Policy{}, err
	}
	p := Policy{Mode: g.opts.Mode, Rules: append(slices.Clone(g.opts.Rules), sp.Rules...), WorkingDirs: g.opts.WorkingDirs}
	if sp.Mode != "" {
		p.Mode = sp.Mode
	}
	return p, nil
}

// Decide returns the decision for a call of tool t with input in session.
func (g *Guard) Decide(ctx context.Context, session string, t *toolkit.Tool, input map[string]any) (Decision, error) {
	p, err := g.Policy(ctx, session)
	if err != nil {
		return Decision{}, err
	}
	return Decide(p, t, input), nil
}

// Metadata keys the middleware puts on a denied or approval_required
// response.
const (
	// MetaApprovalKey: the call id to pass to Guard.Approve.
	MetaApprovalKey = "approval_key"
	// MetaInputDigest: the digest the approval will be bound to.
	MetaInputDigest = "input_digest"
	// MetaSuggestedRules: rules (TOOL or TOOL:PATTERN, []string) that would
	// allow the call (each one can be passed to Guard.Allow).
	MetaSuggestedRules = "suggested_rules"
	// MetaPermissionReason: the step that decided (Decision.Reason), or
	// wire.PermissionApprovalMismatch.
	MetaPermissionReason = wire.MetaPermissionReason
	// MetaSafety: true when a safety check asked; rules cannot allow it.
	MetaSafety = "permission_safety"
)

// Middleware enforces g on every call of a toolkit (add it with tk.Use):
//
//   - ALLOW runs the call;
//   - DENY ends it with toolkit.CodeDenied (state denied) and the reason;
//   - ASK ends it at once with toolkit.CodeApprovalRequired (state denied),
//     records it as Pending and puts MetaApprovalKey, MetaInputDigest,
//     MetaSuggestedRules and MetaPermissionReason in the response
//     metadata. Nothing waits: the worker slot is free immediately. A
//     call whose id is pending with another tool or input is not offered
//     for approval (no MetaApprovalKey; approving the id approves the
//     pending call): it must be sent with a new id. Nor is a call whose
//     ask the store could not record (no leader within recordWait, a
//     full bucket): its message says so, and to send it again later.
//
// When a human approves the call (Guard.Approve), the agent sends the same
// call again (same session, id, tool and input): the approval is consumed
// and the call runs, on whichever worker receives it. A call is known by
// its key (toolkit.ToolCall.Key: its id, or the first id for a client's
// retry of it under an attempt id), so a retry of the approved call after
// overloaded is that call. An approval whose
// tool or input digest differs from the re-sent call ends it with
// CodeDenied and stays unused. Deny rules are checked before approvals, so
// a deny rule added after the approval still wins. A store failure ends
// the call with CodeUnavailable: nothing runs unchecked. The whole check
// is bounded by Options.CheckTimeout when the call's context has no
// earlier deadline; the call itself is not.
func Middleware(g *Guard) toolkit.Middleware {
	return func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			if err := g.check(ctx, call); err != nil {
				return err
			}
			return next(ctx, call, w)
		}
	}
}

// errCheckTimeout is the cause of a check's context ended by
// Options.CheckTimeout (not by the call's own context).
var errCheckTimeout = errors.New("permission: the permission check's bound is past")

// check runs the permission check of a call: nil when it may run, else
// the error that ends it.
func (g *Guard) check(ctx context.Context, call *toolkit.Call) error {
	// The bound, for a store that may wait, unless the call's own
	// deadline comes first: no timer of the check's own otherwise.
	if dl, ok := ctx.Deadline(); g.bounded && (!ok || time.Until(dl) > g.opts.CheckTimeout) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, g.opts.CheckTimeout, errCheckTimeout)
		defer cancel()
	}
	p, err := g.Policy(ctx, call.Scope())
	if errors.Is(err, wire.ErrInvalidSession) {
		// The caller's session cannot have a policy: no retry helps.
		return toolkit.Errorf(toolkit.CodeInvalidInput, "BadRequestError: %v", err)
	}
	if err != nil {
		return g.stateError(ctx, "could not read the session's permissions", err)
	}
	d := Decide(p, call.Tool, call.Input)
	switch d.Behavior {
	case Allow:
		return nil
	case Deny:
		e := toolkit.NewError(toolkit.CodeDenied, "PermissionDeniedError: "+d.Message)
		e.Metadata = decisionMeta(d)
		return e
	}
	if call.Key() == "" {
		// Approve takes a call id: a call without one is allowed
		// by rules only, and is not recorded as pending.
		e := toolkit.NewError(toolkit.CodeApprovalRequired, fmt.Sprintf(
			"PermissionRequiredError: %s The call was not run. It has no call id, so it cannot be approved: send it with an id to have it approved, or allow it with a rule.", d.Message))
		e.Metadata = decisionMeta(d)
		return e
	}
	digest, err := Digest(call.Input)
	if err != nil {
		return toolkit.Errorf(toolkit.CodeInvalidInput, "Input validation failed for tool '%s': %v", call.Name, err)
	}
	run, err := g.useApproval(ctx, call, digest)
	if err != nil || run {
		return err
	}
	switch err := g.recordPending(ctx, call, d, digest); {
	case errors.Is(err, errPendingOther):
		// Approving the id would approve the other call: this one
		// is not offered for approval.
		e := toolkit.NewError(toolkit.CodeApprovalRequired, fmt.Sprintf(
			"PermissionRequiredError: %s The call was not run. Call id '%s' is already waiting for approval with another tool or input, so this call cannot be approved under it: send it again with a new id.",
			d.Message, call.Key()))
		e.Metadata = decisionMeta(d)
		return e
	case err != nil:
		// Not offered for approval either: nobody could find it to
		// approve. Still approval_required, the decision that was made
		// (a rule suggested still allows it); sent again later, it asks
		// again.
		e := toolkit.NewError(toolkit.CodeApprovalRequired, fmt.Sprintf(
			"PermissionRequiredError: %s The call was not run. Its request for approval could not be recorded (%v), so no user can approve it now: send the same call again later to ask again, or have a user allow it with a rule.",
			d.Message, err))
		e.Metadata = decisionMeta(d)
		return e
	}
	e := toolkit.NewError(toolkit.CodeApprovalRequired, fmt.Sprintf(
		"PermissionRequiredError: %s The call was not run. A user must approve it (call id '%s'); then send the same call again, with the same id and input.",
		d.Message, call.Key()))
	e.Metadata = decisionMeta(d)
	e.Metadata[MetaApprovalKey] = call.Key()
	e.Metadata[MetaInputDigest] = digest
	return e
}

// stateError is the unavailable error of a call whose permission state
// could not be read or written (what failed, with err): one that says
// the state is unreachable when the check's bound ended it.
func (g *Guard) stateError(ctx context.Context, what string, err error) error {
	if context.Cause(ctx) == errCheckTimeout {
		return toolkit.Errorf(toolkit.CodeUnavailable,
			"PermissionStateError: the permission state is unreachable: %s within %v (%v). The call was not run; send it again later.", what, g.opts.CheckTimeout, err)
	}
	return toolkit.Errorf(toolkit.CodeUnavailable, "PermissionStateError: %s: %v", what, err)
}

func decisionMeta(d Decision) map[string]any {
	m := map[string]any{MetaPermissionReason: d.Reason}
	if len(d.Suggested) > 0 {
		specs := make([]string, len(d.Suggested))
		for i, r := range d.Suggested {
			specs[i] = r.String()
		}
		m[MetaSuggestedRules] = specs
	}
	if d.Safety {
		m[MetaSafety] = true
	}
	return m
}

// useApproval consumes a matching approval; run is true when the call may
// go ahead.
func (g *Guard) useApproval(ctx context.Context, call *toolkit.Call, digest string) (run bool, err error) {
	a, ok, err := g.store.LoadApproval(ctx, call.Scope(), call.Key())
	if errors.Is(err, ErrUnreadable) {
		// Not an approval anyone gave: the call waits for one, and the
		// operator's approval replaces it.
		g.opts.Logger.Warn("permission: ignoring a stored approval that toolbus did not write", "session", call.Session, "call", call.Key(), "err", err)
		return false, nil
	}
	if err != nil {
		return false, g.stateError(ctx, "could not read approvals", err)
	}
	if !ok {
		return false, nil
	}
	past, err := g.expiry(ctx)
	if err != nil {
		return false, g.stateError(ctx, "could not age the approval", err)
	}
	if past(a.Created, a.Stored) {
		return false, nil
	}
	if a.Denied {
		if a.Tool != call.Name || a.Digest != digest {
			// Another call under the id than the one refused: it asks
			// (and its approval replaces the refusal).
			return false, nil
		}
		g.opts.Logger.Info("permission: denied call sent again", "session", call.Session, "call", call.Key(), "tool", call.Name, "by", a.By)
		return false, deniedError(a)
	}
	if a.Tool != call.Name || a.Digest != digest {
		g.opts.Logger.Warn("permission: approval replayed with a different call", "session", call.Session, "call", call.Key(),
			"approved_tool", a.Tool, "tool", call.Name, "approved_digest", a.Digest, "digest", digest)
		e := toolkit.NewError(toolkit.CodeDenied, fmt.Sprintf(
			"ApprovalMismatchError: the approval of call '%s' was given for a different tool or input, so it cannot be used for this call. Send the approved call unchanged, or make a new call and have it approved.", call.Key()))
		e.Metadata = map[string]any{MetaPermissionReason: wire.PermissionApprovalMismatch, MetaInputDigest: digest}
		return false, e
	}
	used, err := g.store.ConsumeApproval(ctx, a)
	if err != nil {
		return false, g.stateError(ctx, "could not consume the approval", err)
	}
	if used {
		g.opts.Logger.Info("permission: approval used", "session", call.Session, "call", call.Key(), "tool", call.Name, "by", a.By)
		if err := g.store.DeletePending(ctx, call.Scope(), call.Key()); err != nil {
			g.opts.Logger.Warn("permission: could not delete a pending call", "call", call.Key(), "err", err)
		}
	}
	return used, nil
}

// recordWait bounds recordPending: the call's answer is approval_required
// whether or not its ask is recorded (for Guard.Approve to find), and a
// cluster without a leader would hold that answer for as long as it
// lasts (up to Options.CheckTimeout).
const recordWait = 5 * time.Second

// errPendingOther: the call's id is pending with another tool or input.
var errPendingOther = errors.New("permission: the call id is pending with another tool or input")

// recordPending records the call as pending. It fails with
// errPendingOther when its id is pending with another tool or input,
// which stays, and with the store's error when the ask could not be
// recorded (Guard.Approve would not find it).
func (g *Guard) recordPending(ctx context.Context, call *toolkit.Call, d Decision, digest string) error {
	ctx, cancel := context.WithTimeout(ctx, recordWait)
	defer cancel()
	in, _ := canonicalJSON(call.Input)
	if len(in) > MaxPendingInput {
		in = append(in[:MaxPendingInput:MaxPendingInput], "…"...)
	}
	if len(d.Message) > MaxPendingInput { // so the record always fits a message
		d.Message = d.Message[:MaxPendingInput] + "…"
	}
	p := Pending{
		Session: call.Scope(), CallID: call.Key(), Tool: call.Name, Digest: digest, Input: string(in),
		Message: d.Message, Reason: d.Reason, Safety: d.Safety, Suggested: d.Suggested, Created: g.opts.Now().UTC(),
	}
	// A call id pending with another tool or input keeps them until it is
	// decided or expires: a human may be reviewing it, and an approval is
	// for what the human saw, not for what was sent under the id since.
	if old, err := g.store.FindPending(ctx, p.Session, p.CallID); err == nil && len(old) == 1 &&
		(old[0].Digest != digest || old[0].Tool != p.Tool) {
		past, err := g.expiry(ctx)
		if err != nil {
			g.opts.Logger.Error("permission: could not record a pending call", "session", call.Session, "call", call.Key(), "err", err)
			return err // not written over what may be a live ask
		}
		if !past(old[0].Created, old[0].Stored) {
			g.opts.Logger.Warn("permission: a pending call was sent again with another tool or input; the pending call stays",
				"session", call.Session, "call", call.Key(), "tool", call.Name)
			return errPendingOther
		}
	}
	if err := g.store.PutPending(ctx, p); err != nil {
		g.opts.Logger.Error("permission: could not record a pending call", "session", call.Session, "call", call.Key(), "err", err)
		return err
	}
	return nil
}

// Digest returns the digest an approval is bound to: "sha256:" and the hex
// SHA-256 of the input's canonical JSON (object keys sorted, no HTML
// escaping, nil as {}).
func Digest(input map[string]any) (string, error) {
	b, err := canonicalJSON(input)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func canonicalJSON(input map[string]any) ([]byte, error) {
	if input == nil {
		input = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(input); err != nil {
		return nil, fmt.Errorf("input is not JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Errors of the operator-facing methods.
var (
	// ErrNoPending: no pending call has that id (never asked, expired, or
	// already approved or denied).
	ErrNoPending = errors.New("permission: no pending call with that id")
	// ErrApprovalUsed: the call ran with an approval used after it was
	// recorded as pending (another approver's, given meanwhile): the ask
	// read is answered, and approving it again would run the call twice.
	// Approve and Deny wrap it in ErrNoPending.
	ErrApprovalUsed = errors.New("permission: the call ran with an approval given since it asked")
	// ErrAmbiguous: several sessions have a pending call with that id; name
	// the session.
	ErrAmbiguous = errors.New("permission: several sessions have a pending call with that id")
)

// Pending returns the pending calls with the given id; session "" means
// any session.
func (g *Guard) Pending(ctx context.Context, session, callID string) ([]Pending, error) {
	return g.store.FindPending(ctx, session, callID)
}

// ListPending returns at most limit calls waiting for approval, the
// least recently asked first, for a person to look at before approving;
// session "" means every session. more says that other calls waiting
// were left out.
//
// Left out as well: calls past the approval TTL, and calls that wait for
// no approval any more because their session's policy now surely lets
// them run when they are sent again (allowedNow: a rule added since, such
// as the one the ask suggested, or ModeBypass). Those stay recorded until
// they run or expire, and can still be approved; the listing is of what
// waits for a person. They do not count against limit: the calls that
// wait behind any number of them are listed (a MemoryStore and a
// KVStore are read one call at a time, holding only those listed; a
// Store of another kind is asked for ever more calls until limit of
// them wait or it has no more). A session whose policy cannot be read
// keeps its calls listed.
func (g *Guard) ListPending(ctx context.Context, session string, limit int) (ps []Pending, more bool, err error) {
	if limit <= 0 {
		return nil, false, errors.New("permission: the limit must be positive")
	}
	past, err := g.expiry(ctx)
	if err != nil {
		return nil, false, err
	}
	policies := map[string]*Policy{} // by session; nil: unreadable
	waits := func(p Pending) bool {
		if past(p.Created, p.Stored) {
			return false
		}
		pol, ok := policies[p.Session]
		if !ok {
			if len(policies) >= maxListedPolicies {
				clear(policies) // a policy may be large: a bounded cache
			}
			if got, err := g.Policy(ctx, p.Session); err == nil {
				pol = &got
			}
			policies[p.Session] = pol
		}
		return pol == nil || !allowedNow(p, *pol)
	}
	if w, ok := g.store.(pendingWalker); ok {
		err = w.walkPending(ctx, session, func() { ps, more = ps[:0], false }, func(p Pending) bool {
			switch {
			case !waits(p):
				return true
			case len(ps) == limit:
				more = true
				return false
			}
			ps = append(ps, p)
			return true
		})
		if err != nil {
			return nil, false, err
		}
		return ps, more, nil
	}
	for n := limit; ; n = min(2*n, math.MaxInt/2) {
		all, allMore, err := g.store.ListPending(ctx, session, n)
		if err != nil {
			return nil, false, err
		}
		ps = slices.DeleteFunc(all, func(p Pending) bool { return !waits(p) })
		if len(ps) > limit || !allMore {
			return ps[:min(len(ps), limit)], len(ps) > limit, nil
		}
	}
}

// maxListedPolicies bounds the sessions' policies ListPending keeps at
// once while it judges their calls.
const maxListedPolicies = 256

// allowedNow reports whether pol surely lets p's call run when it is sent
// again, judged from what the pending call recorded (its tool, why it
// asked, the rules suggested): the input is not decided again (it may be
// cut, and the tool's kind is the worker's to know). Surely means:
//
//   - it did not ask for an ask rule, nor for a safety check unless the
//     mode is ModeBypass (neither is overridden by an allow rule), and no
//     deny or ask rule names its tool;
//   - the mode is ModeBypass, or the mode is not ModeExplore (where allow
//     rules do not apply) and an allow rule names the tool without a
//     pattern (every call of it), or every rule the ask suggested is an
//     allow rule of the session (a shell line gets one per command, and
//     an allow rule must cover every command).
//
// Anything else stays listed: a pattern written by hand may or may not
// match the input.
func allowedNow(p Pending, pol Policy) bool {
	if p.Reason == "ask rule" || slices.ContainsFunc(pol.Rules, func(r Rule) bool { return r.Tool == p.Tool && r.Behavior != Allow }) {
		return false
	}
	switch mode := pol.Mode.orDefault(); {
	case mode == ModeBypass:
		return true
	case mode == ModeExplore || p.Safety:
		return false
	}
	allows := func(tool, pattern string) bool {
		return slices.ContainsFunc(pol.Rules, func(r Rule) bool { return r.Behavior == Allow && r.Tool == tool && r.Pattern == pattern })
	}
	if allows(p.Tool, "") {
		return true
	}
	return len(p.Suggested) > 0 && !slices.ContainsFunc(p.Suggested, func(s Rule) bool { return s.Tool != p.Tool || !allows(s.Tool, s.Pattern) })
}

// deniedError is the final of a call refused by a (Guard.Deny).
func deniedError(a Approval) error {
	msg := fmt.Sprintf("PermissionDeniedError: a user denied this call of '%s' (call id '%s').", a.Tool, a.CallID)
	if reason := strings.TrimRightFunc(a.Reason, unicode.IsSpace); reason != "" {
		// The reason is a sentence of the text: ended, so the next one
		// does not run on from it.
		if !strings.HasSuffix(reason, ".") && !strings.HasSuffix(reason, "!") && !strings.HasSuffix(reason, "?") {
			reason += "."
		}
		msg = fmt.Sprintf("PermissionDeniedError: a user denied this call of '%s' (call id '%s'): %s", a.Tool, a.CallID, reason)
	}
	e := toolkit.NewError(toolkit.CodeDenied, msg+" The call was not run, and sent again it is denied again.")
	e.Metadata = map[string]any{MetaPermissionReason: wire.PermissionUserDenied}
	return e
}

// MaxDenyReason bounds the reason of a denial (Guard.Deny).
const MaxDenyReason = 4 << 10

// Approve turns a pending call into a one-shot approval bound to its
// session, id, tool and input digest, and returns it. session "" finds the
// call in any session (ErrAmbiguous if the id is pending in several). by
// names the approver, for the logs.
func (g *Guard) Approve(ctx context.Context, session, callID, by string) (Approval, error) {
	return g.settle(ctx, session, callID, Approval{By: by})
}

// Deny refuses a pending call, as Approve approves it: the call is no
// longer pending, and the same call sent again (same session, id, tool
// and input digest) ends toolkit.CodeDenied (state denied, reason
// wire.PermissionUserDenied) with reason, for the model, rather than
// asking again, until the refusal expires with Options.ApprovalTTL as
// an approval does. Another tool or input under the id asks again, and
// its approval replaces the refusal; another id is not affected. As
// approvals, a refusal is consulted only when the policy answers ASK: a
// rule that allows the call, added since, lets it run. It is stored
// under the approval's key, marked Approval.Denied, which builds before
// it refuse to read (no approval: the call asks again). reason is at
// most MaxDenyReason bytes; "" gives none.
func (g *Guard) Deny(ctx context.Context, session, callID, by, reason string) (Approval, error) {
	if len(reason) > MaxDenyReason {
		return Approval{}, fmt.Errorf("permission: the reason is %d bytes, more than %d", len(reason), MaxDenyReason)
	}
	return g.settle(ctx, session, callID, Approval{By: by, Denied: true, Reason: reason})
}

// settle turns the pending call callID of session ("" any) into the
// record d completed with the call: an approval, or a refusal.
func (g *Guard) settle(ctx context.Context, session, callID string, d Approval) (Approval, error) {
	if callID == "" {
		return Approval{}, errors.New("permission: empty call id")
	}
	// The pending call is turned into the approval as the revision read
	// (ApprovePending): of two approvers who both read it, one approves
	// it, and none can store an approval after one was used for a call
	// that asked before (the call would run again).
	for range maxClaimAttempts {
		ps, err := g.store.FindPending(ctx, session, callID)
		if err != nil {
			return Approval{}, err
		}
		if len(ps) > 0 {
			past, err := g.expiry(ctx)
			if err != nil {
				return Approval{}, err
			}
			ps = slices.DeleteFunc(ps, func(p Pending) bool { return past(p.Created, p.Stored) })
		}
		switch len(ps) {
		case 0:
			return Approval{}, fmt.Errorf("%w %q", ErrNoPending, callID)
		case 1:
		default:
			return Approval{}, fmt.Errorf("%w %q: name the session", ErrAmbiguous, callID)
		}
		p := ps[0]
		a := d
		a.Session, a.CallID, a.Tool, a.Digest, a.Created = p.Session, p.CallID, p.Tool, p.Digest, g.opts.Now().UTC()
		approved, err := g.store.ApprovePending(ctx, p, a)
		if errors.Is(err, ErrApprovalUsed) {
			return Approval{}, fmt.Errorf("%w %q: %w", ErrNoPending, callID, err)
		}
		if err != nil {
			return Approval{}, err
		}
		if approved {
			return a, nil
		}
		// Approved, run, or asked again since it was read: read again.
	}
	what := "approving"
	if d.Denied {
		what = "denying"
	}
	return Approval{}, fmt.Errorf("permission: %s call %q: it kept changing meanwhile", what, callID)
}

// storeClock is a Store with a clock of its own, which stamps the
// records it reads (Pending.Stored, Approval.Stored) and expires them
// after ApprovalTTL: a KVStore, on its server's clock.
type storeClock interface {
	ApprovalTTL() time.Duration
	storeNow(ctx context.Context) (time.Time, error)
}

// expiry returns the test of whether a pending call or approval, created
// on its writer's clock and stored on the store's, is past
// Options.ApprovalTTL. Its writer may be another machine, whose clock
// may be off this one's by minutes or hours: a store with a clock of its
// own (storeClock) ages records on that clock alone. One that expires
// them itself within the guard's TTL (a KVStore's bucket max age) holds
// none past it, so none is judged and nothing is asked; with a shorter
// TTL, a record's age is the server's time now (asked once, here) less
// its stamp. A server that stamps nothing (before nats-server 2.10) has
// records aged by Created on this machine's clock, as a MemoryStore's
// (one process, one clock) are.
func (g *Guard) expiry(ctx context.Context) (past func(created, stored time.Time) bool, err error) {
	ttl := g.opts.ApprovalTTL
	sc, ok := g.store.(storeClock)
	if !ok {
		now := g.opts.Now()
		return func(created, _ time.Time) bool { return now.Sub(created) > ttl }, nil
	}
	if keeps := sc.ApprovalTTL(); keeps > 0 && keeps <= ttl {
		return func(time.Time, time.Time) bool { return false }, nil
	}
	server, err := sc.storeNow(ctx)
	if err != nil {
		return nil, err
	}
	now := g.opts.Now()
	return func(created, stored time.Time) bool {
		if server.IsZero() || stored.IsZero() {
			return now.Sub(created) > ttl
		}
		return server.Sub(stored) > ttl
	}, nil
}

// maxClaimAttempts bounds Approve's reads of a pending call that changes
// under it.
const maxClaimAttempts = 8

// SetMode sets a session's mode; "" returns it to the guard's default.
func (g *Guard) SetMode(ctx context.Context, session string, mode Mode) error {
	if mode != "" {
		m, err := ParseMode(string(mode))
		if err != nil {
			return err
		}
		mode = m
	}
	_, err := g.store.UpdateSession(ctx, session, func(p *SessionPolicy) error {
		p.Mode = mode
		return nil
	})
	return err
}

// AddRule adds a rule to a session (an identical rule is not added twice).
// A rule with an empty Source gets "session".
func (g *Guard) AddRule(ctx context.Context, session string, r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if r.Source == "" {
		r.Source = "session"
	}
	_, err := g.store.UpdateSession(ctx, session, func(p *SessionPolicy) error {
		if !slices.ContainsFunc(p.Rules, func(x Rule) bool { return sameRule(x, r) }) {
			p.Rules = append(p.Rules, r)
		}
		return nil
	})
	return err
}

// Allow adds an allow rule written TOOL or TOOL:PATTERN to a session.
func (g *Guard) Allow(ctx context.Context, session, spec string) error {
	r, err := ParseRule(spec, Allow)
	if err != nil {
		return err
	}
	return g.AddRule(ctx, session, r)
}

// RemoveRule removes a session rule (same tool, pattern and behavior);
// removed is false when the session had no such rule, and then nothing
// is written (a session without a policy gets none).
func (g *Guard) RemoveRule(ctx context.Context, session string, r Rule) (removed bool, err error) {
	_, err = g.store.UpdateSession(ctx, session, func(p *SessionPolicy) error {
		n := len(p.Rules)
		p.Rules = slices.DeleteFunc(p.Rules, func(x Rule) bool { return sameRule(x, r) })
		if removed = len(p.Rules) < n; !removed {
			return errNoSuchRule
		}
		return nil
	})
	if errors.Is(err, errNoSuchRule) {
		err = nil
	}
	return removed, err
}

// errNoSuchRule ends a RemoveRule that found nothing to remove, before
// it writes.
var errNoSuchRule = errors.New("permission: no such rule")

func sameRule(a, b Rule) bool {
	return a.Tool == b.Tool && a.Pattern == b.Pattern && a.Behavior == b.Behavior
}

// Filter drops from a listing the tools the session can never run (see
// NeverRuns): those denied by a name-level rule, and in ModeExplore those
// that can never be read-only. lookup finds a tool's flags by name
// (tk.Get); tools it does not know are kept.
func (g *Guard) Filter(ctx context.Context, session string, schemas []toolkit.FunctionSchema, lookup func(name string) (*toolkit.Tool, bool)) ([]toolkit.FunctionSchema, error) {
	p, err := g.Policy(ctx, session)
	if err != nil {
		return nil, err
	}
	out := make([]toolkit.FunctionSchema, 0, len(schemas))
	for _, s := range schemas {
		if t, ok := lookup(s.Function.Name); ok && NeverRuns(p, t) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// Schemas returns the schemas a session sees on tk: its active groups'
// tools, minus those it can never run.
func (g *Guard) Schemas(ctx context.Context, tk *toolkit.Toolkit, session string, minRevision uint64) ([]toolkit.FunctionSchema, error) {
	all, err := tk.SessionSchemas(ctx, session, minRevision)
	if err != nil {
		return nil, err
	}
	return g.Filter(ctx, session, all, tk.Get)
}
