package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/permission"
)

// The permission mount turns the checks of package permission on when the
// config has a permissions section: every call is decided ALLOW, DENY or
// ASK from the session's mode and rules before anything else runs (its
// middleware is the first after logging). Session modes, rules, pending
// calls and approvals live in two JetStream KV buckets
// (toolbus_permissions, toolbus_approvals) shared by the fleet, so an
// approval made with `toolctl approve` is honoured by whichever worker
// receives the re-sent call, also after restarts. An ASK never holds a
// worker slot: the call ends at once with code approval_required. The
// worker announces its default mode and rules, so clients leave out of a
// session's listing the tools it can never run.
func init() {
	addMount("permission", mountPermission)
	addCheck(checkRulePatterns)
}

// patternTools are the tools whose rules take a pattern (a command
// prefix, a path glob); a rule with a pattern for any other tool the
// worker serves (an MCP tool, execute_python_code, echo) matches no call.
var patternTools = []string{permission.ShellTool, permission.ViewFileTool, permission.WriteFileTool, permission.InsertFileTool}

// deadPatterns warns of each rule with a pattern for a tool that takes
// none: a deny or ask written so stops nothing, silently.
func deadPatterns(rules []permission.Rule) []string {
	var out []string
	for _, r := range rules {
		if r.Pattern != "" && !slices.Contains(patternTools, r.Tool) {
			out = append(out, fmt.Sprintf("permissions: the rule %s %s matches no call: only %s take a pattern; write %s alone to match every call of it",
				r.Behavior, r.String(), strings.Join(patternTools, ", "), r.Tool))
		}
	}
	return out
}

func checkRulePatterns(cfg *config.Config) ([]string, error) {
	if cfg.Permissions == nil {
		return nil, nil
	}
	rules, err := cfg.Permissions.Rules()
	if err != nil {
		return nil, nil // the config's own validation reports it
	}
	return deadPatterns(rules), nil
}

func mountPermission(ctx context.Context, env *mountEnv) (func(), error) {
	p := env.Config.Permissions
	if p == nil {
		return nil, nil
	}
	mode, err := permission.ParseMode(p.Mode)
	if err != nil {
		return nil, err
	}
	rules, err := p.Rules()
	if err != nil {
		return nil, err
	}
	for _, w := range deadPatterns(rules) {
		env.Logger.Warn(w)
	}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := permission.NewKVStore(kctx, env.JetStream, &permission.KVConfig{ApprovalTTL: p.ApprovalTTL, PolicyTTL: env.Config.State.SessionTTL, PolicyMaxSessions: env.Config.State.MaxSessions, Replicas: cmp.Or(p.KVReplicas, env.KVReplicas)})
	if err != nil {
		return nil, fmt.Errorf("binding the permission buckets: %w", err)
	}
	g, err := permission.NewGuard(st, &permission.Options{
		Mode: mode, Rules: rules, WorkingDirs: env.Config.WorkingDirs(), ApprovalTTL: p.ApprovalTTL,
		CheckTimeout: p.CheckTimeout, Logger: env.Logger,
	})
	if err != nil {
		return nil, err
	}
	env.Use(permission.Middleware(g))
	env.Policy = &permission.Announced{Mode: string(mode), Allow: p.Allow, Deny: p.Deny, Ask: p.Ask}
	env.Announce(wire.MetaPermissions, permission.Announce(*env.Policy))
	var specs []string
	for _, r := range rules {
		specs = append(specs, string(r.Behavior)+" "+r.String())
	}
	env.Logger.Info("permission checks on", "mode", string(mode), "rules", strings.Join(specs, ", "),
		"working_dirs", strings.Join(env.Config.WorkingDirs(), ","), "check_timeout", p.CheckTimeout.String())
	return nil, nil
}
