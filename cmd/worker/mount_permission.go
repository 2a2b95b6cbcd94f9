package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
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
func init() { addMount("permission", mountPermission) }

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
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := permission.NewKVStore(kctx, env.JetStream, &permission.KVConfig{ApprovalTTL: p.ApprovalTTL, PolicyTTL: env.Config.State.SessionTTL, PolicyMaxSessions: env.Config.State.MaxSessions, Replicas: cmp.Or(p.KVReplicas, env.KVReplicas)})
	if err != nil {
		return nil, fmt.Errorf("binding the permission buckets: %w", err)
	}
	g, err := permission.NewGuard(st, &permission.Options{
		Mode: mode, Rules: rules, WorkingDirs: env.Config.WorkingDirs(), ApprovalTTL: p.ApprovalTTL, Logger: env.Logger,
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
		"working_dirs", strings.Join(env.Config.WorkingDirs(), ","))
	return nil, nil
}
