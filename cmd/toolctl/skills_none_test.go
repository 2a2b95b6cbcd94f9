package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// `skills --session S` printed nothing at all when S sees no skill, so an
// operator could not tell an empty prompt from a broken command. It says
// so on stderr, as `skills`, groups and instructions do, and stdout stays
// empty (the prompt is empty) for a script that pastes it into a prompt;
// `skills --json` stays a valid empty list.
func TestSkillsSessionSeesNoneSaysSo(t *testing.T) {
	groupSkill := skillsFleet(t) // one skill, in the group web
	natstest.WaitFor(t, "the fleet's skill", func() bool {
		_, out, _ := toolctl(t, "--nats", groupSkill, "skills")
		return strings.Contains(out, "scrape")
	})
	for _, c := range []struct {
		name string
		url  string
		want []string // in stderr
	}{
		{"empty fleet", echoFleet(t), []string{"no skills", "skills directories"}},
		{"skills in inactive groups", groupSkill, []string{`session "s1" sees no skill`, "web"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := toolctl(t, "--nats", c.url, "skills", "--session", "s1")
			if code != exitOK {
				t.Errorf("exit %d, want %d: %s", code, exitOK, errs)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			for _, want := range c.want {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr %q does not say %q", errs, want)
				}
			}
		})
	}
	// Activating the group shows its skill, and nothing more is said.
	if code, _, errs := toolctl(t, "--nats", groupSkill, "groups", "set", "--session", "s2", "web"); code != exitOK {
		t.Fatalf("groups set: exit %d: %s", code, errs)
	}
	if code, out, errs := toolctl(t, "--nats", groupSkill, "skills", "--session", "s2"); code != exitOK || !strings.Contains(out, "<agent-skills>") || !strings.Contains(out, "scrape") || errs != "" {
		t.Errorf("skills --session s2 with web active: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}

	code, out, errs := toolctl(t, "--nats", echoFleet(t), "skills", "--json")
	var list []skillJSON
	if err := json.Unmarshal([]byte(out), &list); code != exitOK || err != nil || list == nil || len(list) != 0 || errs != "" {
		t.Errorf("skills --json on a fleet with no skill: exit %d, stdout %q (%v), stderr %q; want an empty JSON list", code, out, err, errs)
	}
}

// skillsFleet starts an embedded server with one worker that has a group
// web holding one skill (scrape) and no skill in basic, and returns its
// URL.
func skillsFleet(t *testing.T) string {
	t.Helper()
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	state, err := bus.NewKVState(natstest.Ctx(t), natstest.JS(t, nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access."}); err != nil {
		t.Fatal(err)
	}
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("web", skill.Static{{Name: "scrape", Description: "Scrape pages.", Dir: "/srv/skills/scrape", Markdown: "# Scrape"}}); err != nil {
		t.Fatal(err)
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1", Meta: map[string]func() any{wire.MetaSkills: skill.Announce(set)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return s.ClientURL()
}
