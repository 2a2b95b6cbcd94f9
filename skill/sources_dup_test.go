package skill_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// Two workers declare a skill of the same name in the same group, each
// its own: the prompt lists the later one's (in instance order), so its
// body is fetched from that worker, not from the other, whose skill the
// session does not see.
func TestSourcesAreTheVisibleSkills(t *testing.T) {
	s := natstest.Server(t)
	f := fleet(t, natstest.Conn(t, s))
	for _, w := range []struct{ id, desc, body string }{{"w1", "Old PDF forms.", "# old"}, {"w2", "New PDF forms.", "# new"}} {
		root := t.TempDir()
		writeSkill(t, filepath.Join(root, "pdf"), "pdf", w.desc, w.body)
		tk := toolkit.New(nil)
		set, err := skill.NewSet(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := set.AddDir("", root, &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
			t.Fatal(err)
		}
		if err := skill.Install(tk, set); err != nil {
			t.Fatal(err)
		}
		announce(t, natstest.Conn(t, s), tk, w.id, time.Hour, set)
		sub, err := skill.Serve(natstest.Conn(t, s), w.id, set, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
	}
	natstest.WaitFor(t, "w1 and w2", func() bool { return len(skill.FleetSkills(f, nil)) == 2 })
	visible := skill.Visible(skill.FleetSkills(f, nil), nil)
	if len(visible) != 1 || visible[0].Description != "New PDF forms." {
		t.Fatalf("visible %+v, want w2's pdf", visible)
	}
	group, ids, ok := skill.Sources(f, "pdf", nil)
	if !ok || group != "basic" || !slices.Equal(ids, []string{"w2"}) {
		t.Errorf("Sources = %q %v %v, want basic [w2]", group, ids, ok)
	}
	if ok {
		body, err := skill.Fetch(natstest.Ctx(t), natstest.Conn(t, s), ids, "pdf", group)
		if err != nil || body != "# new" {
			t.Errorf("Fetch = %q, %v; want the body of the skill the prompt lists, # new", body, err)
		}
	}
	vs := skill.VisibleSources(f, nil, nil)
	if len(vs) != 1 || !slices.Equal(vs[0].Instances, []string{"w2"}) {
		t.Errorf("VisibleSources = %+v, want pdf from [w2]", vs)
	}
}
