package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/skill"
)

// The skills mount loads the config's skills: directories into a
// skill.Set, the read-only Skill viewer tool into the toolkit, and the
// catalog (names, descriptions, groups, directories; no bodies) into the
// worker's announcements, so clients render the <agent-skills> prompt
// (toolctl skills) and any worker that declares a skill serves its body.
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

func mountSkills(_ context.Context, env *mountEnv) (func(), error) {
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
	env.Skills = set
	var names []string
	for _, s := range set.All() {
		names = append(names, s.Group+"/"+s.Name)
	}
	env.Logger.Info("skills loaded", "skills", names, "skipped", len(set.Warnings()))
	return nil, nil
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
	return out, nil
}
