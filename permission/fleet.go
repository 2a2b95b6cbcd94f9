package permission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// Permissions across a fleet. A worker that checks permissions announces
// its defaults under wire.MetaPermissions (Announce), so that clients can
// leave out of a session's listing the tools no serving worker could ever
// run for it (ListFilter).

// Announced is a worker's permission defaults as it announces them: the
// mode of sessions that set none and its worker-wide rules (TOOL or
// TOOL:PATTERN).
type Announced struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty"`
}

// String is the policy in one line, for logs ("none" for a nil policy).
func (a *Announced) String() string {
	if a == nil {
		return "none (no permission checks)"
	}
	c := a.canonical()
	return fmt.Sprintf("mode %s, allow %v, deny %v, ask %v", c.Mode, c.Allow, c.Deny, c.Ask)
}

// canonical sorts the lists: their order decides nothing.
func (a Announced) canonical() Announced {
	for _, l := range []*[]string{&a.Allow, &a.Deny, &a.Ask} {
		*l = slices.Compact(slices.Sorted(slices.Values(*l)))
	}
	return a
}

// Same reports whether two policies (nil: no checks) decide every call
// alike. Working directories are not compared: they are paths of each
// worker's machine.
func Same(a, b *Announced) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := a.canonical(), b.canonical()
	return x.Mode == y.Mode && slices.Equal(x.Allow, y.Allow) && slices.Equal(x.Deny, y.Deny) &&
		slices.Equal(x.Ask, y.Ask)
}

// ErrFleetPolicy is returned (wrapped) by CheckFleet when a live worker of
// the same queue group checks permissions differently.
var ErrFleetPolicy = errors.New("the fleet checks permissions differently")

// CheckFleet compares a worker's permission policy (nil: it checks none)
// with the policies announced by the live instances of its queue group
// that serve some of the same tools, other than itself. A call of such a
// tool goes to any of them, so they must decide it alike: otherwise a
// write that one worker holds for approval another runs at once. The
// error names the first instance that differs, the tools they share and
// both policies.
func CheckFleet(f *discovery.Fleet, self, queue string, tools []string, mine *Announced) error {
	for _, in := range f.Instances() {
		shared := slices.DeleteFunc(slices.Clone(tools), func(t string) bool { return !slices.Contains(in.Tools, t) })
		if in.ID == self || in.Queue != queue || len(shared) == 0 {
			continue
		}
		theirs, ok, err := InstancePolicy(in)
		if err != nil {
			return fmt.Errorf("%w: instance %s announces a permission policy this version cannot read: %v", ErrFleetPolicy, in.ID, err)
		}
		var t *Announced
		if ok {
			t = &theirs
		}
		if !Same(mine, t) {
			return fmt.Errorf("%w: instance %s of queue group %q serves %s too and checks %s; this worker would check %s. "+
				"Give the workers of a queue group that serve the same tools the same permissions section; to change the policy, stop them first",
				ErrFleetPolicy, in.ID, queue, strings.Join(shared, ", "), t, mine)
		}
	}
	return nil
}

// Announce is the announcement part of a worker's defaults, for
// discovery.AnnouncerOptions.Meta under wire.MetaPermissions.
func Announce(a Announced) func() any { return func() any { return a } }

// InstancePolicy reads the defaults an instance announced; ok is false
// when it checks no permissions.
func InstancePolicy(in discovery.Instance) (a Announced, ok bool, err error) {
	ok, err = in.DecodeMeta(wire.MetaPermissions, &a)
	return a, ok, err
}

// Options returns the guard options of announced defaults. A mode or rule
// this version cannot read is left out (a mode falls back to Default) and
// reported in skipped.
func (a Announced) Options() (opts *Options, skipped []error) {
	opts = &Options{}
	if m, err := ParseMode(a.Mode); err == nil {
		opts.Mode = m
	} else {
		skipped = append(skipped, err)
	}
	for _, list := range []struct {
		specs []string
		b     Behavior
	}{{a.Deny, Deny}, {a.Ask, Ask}, {a.Allow, Allow}} {
		for _, spec := range list.specs {
			r, err := ParseRule(spec, list.b)
			if err != nil {
				skipped = append(skipped, err)
				continue
			}
			opts.Rules = append(opts.Rules, r)
		}
	}
	return opts, skipped
}

// ListFilter narrows a session's listing of a fleet (bus.ClientOptions.
// Filter) to the tools some serving worker could run for it: a tool stays
// when at least one instance serving it checks no permissions or, with its
// announced defaults and the session's stored mode and rules, could run
// some call of it (see NeverRuns). reset_tools, served everywhere, stays.
// store is asked for the permission store only when some instance checks
// permissions. Announced parts this version cannot read are logged to log
// (nil: slog.Default()) and left out.
func ListFilter(store func(ctx context.Context) (Store, error), log *slog.Logger) func(ctx context.Context, f *discovery.Fleet, session string, schemas []toolkit.FunctionSchema) ([]toolkit.FunctionSchema, error) {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, f *discovery.Fleet, session string, schemas []toolkit.FunctionSchema) ([]toolkit.FunctionSchema, error) {
		policies := map[string]*Announced{}
		for _, in := range f.Instances() {
			a, ok, err := InstancePolicy(in)
			if err != nil {
				log.Warn("permission: ignoring an instance's announced permissions", "instance", in.ID, "err", err)
				continue
			}
			if ok {
				policies[in.ID] = &a
			}
		}
		if len(policies) == 0 {
			return schemas, nil
		}
		st, err := store(ctx)
		if err != nil {
			return nil, err
		}
		lookup := func(name string) (*toolkit.Tool, bool) {
			t, ok := f.ToolInfo(name)
			if !ok {
				return nil, false
			}
			opts := []toolkit.Option{}
			if t.ReadOnly {
				opts = append(opts, toolkit.ReadOnly())
			}
			if t.Kind != "" {
				opts = append(opts, toolkit.WithKind(t.Kind)) // unknown to this version: kept
			}
			d, err := toolkit.Describe(&toolkit.Tool{Name: t.Name}, opts...)
			return d, err == nil
		}
		runs := map[string]map[string]bool{} // instance → tools it may run
		for id, p := range policies {
			opts, skipped := p.Options()
			for _, err := range skipped {
				log.Warn("permission: an instance announces what this version cannot read; left out", "instance", id, "err", err)
			}
			g, err := NewGuard(st, opts)
			if err != nil {
				return nil, err
			}
			kept, err := g.Filter(ctx, session, schemas, lookup)
			if err != nil {
				return nil, fmt.Errorf("reading the permissions of session %q: %w", session, err)
			}
			runs[id] = map[string]bool{}
			for _, s := range kept {
				runs[id][s.Function.Name] = true
			}
		}
		return slices.DeleteFunc(slices.Clone(schemas), func(s toolkit.FunctionSchema) bool {
			t, ok := f.ToolInfo(s.Function.Name)
			if !ok {
				return false // reset_tools: not announced, served everywhere
			}
			return !slices.ContainsFunc(t.Instances, func(id string) bool { return policies[id] == nil || runs[id][s.Function.Name] })
		}), nil
	}
}
