package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// The skills mount loads the config's skills: directories into a
// skill.Set, the read-only Skill viewer tool into the toolkit, and the
// catalog (names, descriptions, groups, directories; no bodies) into the
// worker's announcements, so clients render the <agent-skills> prompt
// (toolctl skills). The Skill tool of any worker with skills answers for
// every skill of the fleet: its own from its files, the others' by asking
// a worker that declares them (skill.Serve on tools.skill.<instance>).
// A bad SKILL.md or a missing directory is logged and skipped, never
// fatal; --check-config lists them as warnings. Edited files are picked up
// without a restart.
func init() {
	addMount("skills", mountSkills)
	addCheck(checkSkills)
}

// skillSet builds the set of the config's skill directories.
func skillSet(cfg *config.Config, log *slog.Logger) (*skill.Set, error) {
	set, err := skill.NewSet(&skill.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	for _, s := range cfg.Skills {
		if _, err := set.AddDir(s.Group, s.Dir, &skill.LoaderOptions{ScanSubdirs: s.ScanSubdirs, Logger: log}); err != nil {
			return nil, err
		}
	}
	return set, nil
}

func mountSkills(ctx context.Context, env *mountEnv) (func(), error) {
	if len(env.Config.Skills) == 0 {
		return nil, nil
	}
	set, err := skillSet(env.Config, env.Logger)
	if err != nil {
		return nil, err
	}
	if err := skill.Install(env.Toolkit, set); err != nil {
		return nil, err
	}
	sub, err := skill.Serve(env.Conn, env.Instance, set, env.Logger)
	if err != nil {
		return nil, err
	}
	fleet, err := discovery.NewFleet(ctx, env.Conn, &discovery.FleetOptions{Logger: env.Logger})
	if err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	// The viewer answers with the skill the session sees in the fleet,
	// from this worker's skills or fetched from a worker declaring it.
	local := skill.Viewer(set, env.Toolkit)
	viewer := toolkit.Raw(skill.ViewerName, skill.ViewerDescription, skill.ViewerSchema(), fleetViewer(env, fleet, local.Handler))
	env.Toolkit.Remove(skill.ViewerName)
	if err := env.Toolkit.Add(viewer, toolkit.ReadOnly(), toolkit.WithKind(toolkit.KindSkill), toolkit.ListedWith(set.GroupsWithSkills)); err != nil {
		sub.Unsubscribe()
		fleet.Close()
		return nil, err
	}
	env.Announce(wire.MetaSkills, skill.Announce(set))
	var names []string
	for _, s := range set.All() {
		names = append(names, s.Group+"/"+s.Name)
	}
	env.Logger.Info("skills loaded", "skills", names, "skipped", len(set.Warnings()))
	return func() {
		sub.Unsubscribe()
		fleet.Close()
	}, nil
}

// fleetViewer wraps the local viewer so that it answers with the skill
// the session sees in the fleet's prompt: when another worker declares
// the skill a session sees under that name (a later group's replaces an
// earlier one, and this worker may hold only the earlier), the body is
// fetched from it; this worker's own is the answer when it declares that
// very skill, when the fleet does not know the name (yet), or when the
// workers declaring it do not answer and it has one of that name.
func fleetViewer(env *mountEnv, fleet *discovery.Fleet, local toolkit.Handler) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		name, _ := call.Input["skill"].(string)
		active, _, aerr := env.Toolkit.ActiveGroups(ctx, call.Scope(), call.GroupsRevision)
		if aerr != nil {
			return local(ctx, call, w)
		}
		group, instances, ok := skill.Sources(fleet, name, active)
		if !ok || slices.Contains(instances, env.Instance) {
			return local(ctx, call, w)
		}
		body, ferr := skill.Fetch(ctx, env.Conn, instances, name, group)
		if ferr == nil {
			return w.Write(toolkit.Text(body))
		}
		if err := local(ctx, call, w); toolkit.CodeOf(err) != toolkit.CodeToolError {
			return err
		}
		return toolkit.Errorf(toolkit.CodeUnavailable, "SkillUnavailableError: skill '%s' lives on %s, which did not answer: %v", name, strings.Join(instances, ", "), ferr)
	}
}

// checkSkills loads every skill directory and warns about each skipped
// skill (file and reason).
func checkSkills(cfg *config.Config) ([]string, error) {
	if len(cfg.Skills) == 0 {
		return nil, nil
	}
	set, err := skillSet(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, w := range set.Warnings() {
		out = append(out, "skill skipped: "+w.String())
	}
	return append(out, duplicateSkills(set.Catalog())...), nil
}

// duplicateSkills says of each skill whose name a later one takes (in
// config order) which replaces which, as the worker logs at start.
func duplicateSkills(catalog []skill.Skill) []string {
	var out []string
	first := map[string]string{}
	for _, sk := range catalog {
		if dir, ok := first[sk.Name]; ok {
			out = append(out, fmt.Sprintf("skill %s: declared in %s and in %s; where both are seen, the later (%s) replaces the earlier", sk.Name, dir, sk.Dir, sk.Dir))
			continue
		}
		first[sk.Name] = sk.Dir
	}
	return out
}
