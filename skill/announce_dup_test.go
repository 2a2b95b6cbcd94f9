package skill_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// A name whose later skill does not fit the announcement is left out
// whole: announcing only its earlier skill made the fleet's prompt list
// that one, while the worker's Skill tool answers with the later one (the
// one it sees), so the model read a description and got another body.
func TestAnnounceLeavesOutANameWhole(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "a-dup"), "dup", "The earlier dup.", "# Earlier")
	for i := range 300 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("m%03d", i)), fmt.Sprintf("m%03d", i), strings.Repeat("d", 1000), "# M")
	}
	writeSkill(t, filepath.Join(root, "z-dup"), "dup", "The later dup, at length "+strings.Repeat("l", 2000), "# Later")
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("", root, &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	f := fleet(t, natstest.Conn(t, s))
	announce(t, natstest.Conn(t, s), tk, "w1", time.Hour, set)
	natstest.WaitFor(t, "w1", func() bool { return len(f.Instances()) == 1 })
	got := skill.FleetSkills(f, nil)
	if len(got) == 0 || len(got) >= 302 {
		t.Fatalf("announced %d skills; want some left out", len(got))
	}
	served, _ := set.Find("dup", nil)
	if filepath.Base(served.Dir) != "z-dup" {
		t.Fatalf("the worker answers dup with the skill in %s; want z-dup's", served.Dir)
	}
	for _, sk := range skill.Visible(got, nil) {
		if sk.Name == "dup" && sk.Dir != served.Dir {
			t.Errorf("the fleet lists dup from %s (%q); the worker answers with the one in %s (%q)", sk.Dir, sk.Description, served.Dir, served.Markdown)
		}
	}
}
