package skill_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
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
	// The announcer waits at most 1 s for the catalog (a loaded machine
	// reads 302 skills slower): the first announcement may come without
	// skills, the next with them.
	natstest.WaitFor(t, "w1's skills", func() bool { return len(skill.FleetSkills(f, nil)) > 0 })
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

// A name whose earlier skill does not fit the announcement while its
// later one does kept neither: the earlier one's being left out took
// the later one too, though wherever both are visible the later is the
// one the worker's Skill tool answers with, so listing it alone is
// true. The later one is announced (the earlier stays out: listed, it
// would be the one the fleet shows where the later is not visible, but
// so it is on the worker too, and it did not fit).
func TestAnnounceKeepsALaterSkillThatFits(t *testing.T) {
	s := natstest.Server(t)
	root, vault := t.TempDir(), t.TempDir()
	// About 220 KiB of basic skills, then a basic dup larger than the
	// rest of MaxAnnounced (256 KiB), then vault's small dup.
	for i := range 200 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("m%03d", i)), fmt.Sprintf("m%03d", i), smallDescription(root), "# M")
	}
	writeSkill(t, filepath.Join(root, "z-dup"), "dup", "The basic dup, at length "+strings.Repeat("l", 60000), "# Basic")
	writeSkill(t, filepath.Join(vault, "dup"), "dup", "The vault dup.", "# Vault")
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("", root, &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("vault", vault, &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Vault tools."}); err != nil {
		t.Fatal(err)
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	f := fleet(t, natstest.Conn(t, s))
	announce(t, natstest.Conn(t, s), tk, "w1", time.Hour, set)
	natstest.WaitFor(t, "w1's skills", func() bool { return len(skill.FleetSkills(f, nil)) > 0 })
	got := skill.FleetSkills(f, nil)
	if len(got) < 200 {
		t.Fatalf("announced %d skills; want the 200 small ones at least", len(got))
	}
	for _, active := range [][]string{nil, {"vault"}} {
		served, _ := set.Find("dup", active)
		var listed *skill.Skill
		for _, sk := range skill.Visible(got, active) {
			if sk.Name == "dup" {
				listed = &sk
			}
		}
		switch {
		case listed != nil && listed.Dir != served.Dir:
			t.Errorf("active %v: the fleet lists dup from %s; the worker answers with the one in %s", active, listed.Dir, served.Dir)
		case listed == nil && slices.Contains(active, "vault"):
			t.Errorf("active %v: the fleet lists no dup; want vault's, which fits and is the one the worker answers with (%s)", active, served.Dir)
		case listed != nil && active == nil:
			t.Errorf("active %v: the fleet lists basic's dup, which does not fit the announcement", active)
		}
	}
}

// A skill left out because a later skill of its name does not fit still
// took its share of MaxAnnounced, so a skill after it that fits the
// skills announced was left out too. The budget counts only the skills
// announced.
func TestAnnounceBudgetCountsOnlyAnnounced(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	// An early dup of about 30 KB, about 220 KB of small skills, a later
	// dup of about 60 KB, larger than the rest of MaxAnnounced (256 KiB),
	// and a skill of about 20 KB: it fits without the early dup, which
	// is left out with the later one, and not with it.
	writeSkill(t, filepath.Join(root, "a-dup"), "dup", "The early dup, at length "+strings.Repeat("e", 30000), "# Early")
	for i := range 200 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("m%03d", i)), fmt.Sprintf("m%03d", i), smallDescription(root), "# M")
	}
	writeSkill(t, filepath.Join(root, "y-dup"), "dup", "The later dup, at length "+strings.Repeat("l", 60000), "# Later")
	writeSkill(t, filepath.Join(root, "zz-big"), "zz-big", "A large skill, at length "+strings.Repeat("z", 20000), "# Big")
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
	natstest.WaitFor(t, "w1's skills", func() bool { return len(skill.FleetSkills(f, nil)) > 0 })
	got := skill.FleetSkills(f, nil)
	var names []string
	for _, sk := range got {
		names = append(names, sk.Name)
	}
	if slices.Contains(names, "dup") {
		t.Errorf("the fleet lists dup, whose later skill does not fit the announcement: %v", got[slices.Index(names, "dup")].Dir)
	}
	if !slices.Contains(names, "zz-big") {
		t.Errorf("announced %d skills without zz-big, which fits beside the skills announced", len(got))
	}
}

// smallDescription is the description of the small skills that fill an
// announcement under root, about 1 KB. Each skill is announced with its
// directory, root's name in it: the description is shorter by what that
// name takes past 64 bytes (about its length under /tmp), so that the
// skills come to the same bytes under a TMPDIR of any length.
func smallDescription(root string) string { return strings.Repeat("d", 1064-len(root)) }

// A skill left out for a later skill of its name stayed out once the
// catalog was fitted again, though the later one went in then with bytes
// another name gave back, and it fitted beside every skill announced:
// the fleet's prompt lacked a skill the announcement had room for.
func TestAnnounceRefitKeepsAnEarlierSkillThatFits(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	// In catalog order: aa (about 20 KB), x (20 KB), 180 small skills
	// (about 200 KB), a later x (30 KB) and a later aa (45 KB). Fitted in
	// order, the later x and aa do not fit, so the earlier ones leave
	// too; with their bytes back the later x fits, and the earlier x
	// beside it: only aa, whose later skill fits in no way, stays out.
	writeSkill(t, filepath.Join(root, "a-aa"), "aa", "The early aa, at length "+strings.Repeat("a", 20000), "# Early aa")
	writeSkill(t, filepath.Join(root, "b-x"), "x", "The early x, at length "+strings.Repeat("e", 20000), "# Early x")
	for i := range 180 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("m%03d", i)), fmt.Sprintf("m%03d", i), smallDescription(root), "# M")
	}
	writeSkill(t, filepath.Join(root, "y-x"), "x", "The later x, at length "+strings.Repeat("l", 30000), "# Later x")
	writeSkill(t, filepath.Join(root, "z-aa"), "aa", "The later aa, at length "+strings.Repeat("z", 45000), "# Later aa")
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("", root, &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	// The catalog is as built: each inequality below holds by some KB.
	size := map[string]int{}
	for _, sk := range set.Catalog() {
		b, err := json.Marshal(skill.Announced{Name: sk.Name, Description: sk.Description, Group: toolkit.BasicGroup, Dir: sk.Dir})
		if err != nil {
			t.Fatal(err)
		}
		key := filepath.Base(sk.Dir)
		if strings.HasPrefix(key, "m") {
			key = "m"
		}
		size[key] += len(b) + 1
	}
	earlyAA, earlyX, m, laterX, laterAA := size["a-aa"], size["b-x"], size["m"], size["y-x"], size["z-aa"]
	switch {
	case earlyAA+earlyX+m > skill.MaxAnnounced:
		t.Fatal("the small skills do not fit after the early ones")
	case earlyAA+earlyX+m+laterX <= skill.MaxAnnounced, earlyAA+earlyX+m+laterAA <= skill.MaxAnnounced:
		t.Fatal("a later skill fits beside the early ones")
	case earlyX+m+laterX > skill.MaxAnnounced:
		t.Fatal("the x skills do not fit beside the small ones")
	case m+laterX+laterAA <= skill.MaxAnnounced:
		t.Fatal("the later aa fits beside the later x")
	}
	tk := toolkit.New(nil)
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	f := fleet(t, natstest.Conn(t, s))
	announce(t, natstest.Conn(t, s), tk, "w1", time.Hour, set)
	natstest.WaitFor(t, "w1's skills", func() bool { return len(skill.FleetSkills(f, nil)) > 0 })
	var dirs []string
	for _, sk := range skill.FleetSkills(f, nil) {
		if !strings.HasPrefix(filepath.Base(sk.Dir), "m") {
			dirs = append(dirs, filepath.Base(sk.Dir))
		}
	}
	if want := []string{"b-x", "y-x"}; !slices.Equal(dirs, want) {
		t.Errorf("announced, beside the small skills, %v; want %v (the early x fits beside the skills announced, and its later x is announced)", dirs, want)
	}
}
