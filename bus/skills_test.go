package bus

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// writeSkill writes dir/SKILL.md.
func writeSkill(t *testing.T, dir, name, desc, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, skill.FileName), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillWorker is a toolkit with the web group and a skill set: pdf in
// basic, scrape in web, and one from dir in basic.
func skillWorker(t *testing.T, root string) (*toolkit.Toolkit, *skill.Set) {
	t.Helper()
	tk := fleetToolkit(t)
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeSkill(t, filepath.Join(root, "basic", "pdf"), "pdf", "Fill PDF forms.", "# PDF")
	writeSkill(t, filepath.Join(root, "web", "scrape"), "scrape", "Scrape pages.", "# Scrape")
	if _, err := set.AddDir("", filepath.Join(root, "basic"), &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("web", filepath.Join(root, "web"), &skill.LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	return tk, set
}

// The fleet renders exactly what the worker's own skill set renders, for
// the session's active groups, and follows edits of SKILL.md files.
func TestFleetSkillInstructions(t *testing.T) {
	s := kvTestServer(t)
	root := t.TempDir()
	tk, set := skillWorker(t, root)
	f := startFleet(t, kvTestConn(t, s), FleetConfig{})
	startAnnouncer(t, kvTestConn(t, s), tk, AnnouncerConfig{Instance: "w1", Interval: 50 * time.Millisecond, Skills: set})
	fleetWaitFor(t, "the skills", func() bool { return len(f.Skills()) == 2 })
	state := newTestKVState(t, kvTestJS(t, kvTestConn(t, s)), KVStateConfig{})
	ctx := kvTestCtx(t)
	rev, err := state.Store(ctx, "web-session", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		session string
		rev     uint64
		active  []string
	}{
		{"new-session", 0, nil},
		{"web-session", rev, []string{"web"}},
	}
	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			got, err := f.SkillInstructions(ctx, state, tt.session, tt.rev)
			if err != nil {
				t.Fatal(err)
			}
			if want := set.Instructions(tt.active); got != want || want == "" {
				t.Errorf("fleet renders\n%s\nthe worker renders\n%s", got, want)
			}
		})
	}

	// An edit shows within an announce interval.
	writeSkill(t, filepath.Join(root, "basic", "pdf"), "pdf", "Fill and merge PDF forms, now with more.", "# PDF")
	fleetWaitFor(t, "the edited skill", func() bool {
		got, _ := f.SkillInstructions(ctx, state, "new-session", 0)
		return got == set.Instructions(nil) && len(got) > 0 && f.Skills()[0].Description == "Fill and merge PDF forms, now with more."
	})
}

// Two workers declaring the same skills list them once; a worker with no
// skills set announces none; a fleet without skills renders "".
func TestFleetSkillsMerge(t *testing.T) {
	s := kvTestServer(t)
	tk1, set := skillWorker(t, t.TempDir())
	f := startFleet(t, kvTestConn(t, s), FleetConfig{})
	state := newTestKVState(t, kvTestJS(t, kvTestConn(t, s)), KVStateConfig{})
	ctx := kvTestCtx(t)

	bare := startAnnouncer(t, kvTestConn(t, s), fleetToolkit(t), AnnouncerConfig{Instance: "w0", Interval: time.Hour})
	if got := bare.Announcement().Skills; got != nil {
		t.Errorf("an announcer without skills announces %v", got)
	}
	fleetWaitFor(t, "w0", func() bool { return len(f.Instances()) == 1 })
	if got, err := f.SkillInstructions(ctx, state, "s", 0); got != "" || err != nil {
		t.Errorf("no skills: %q, %v; want empty", got, err)
	}

	startAnnouncer(t, kvTestConn(t, s), tk1, AnnouncerConfig{Instance: "w1", Interval: time.Hour, Skills: set})
	startAnnouncer(t, kvTestConn(t, s), tk1, AnnouncerConfig{Instance: "w2", Interval: time.Hour, Skills: set})
	fleetWaitFor(t, "w1 and w2", func() bool { return len(f.Instances()) == 3 })
	var names []string
	for _, sk := range f.Skills() {
		names = append(names, sk.Group+"/"+sk.Name)
	}
	if want := []string{"basic/pdf", "web/scrape"}; !slices.Equal(names, want) {
		t.Errorf("merged skills %v, want %v", names, want)
	}
	if got, _ := f.SkillInstructions(ctx, state, "s", 0); got != set.Instructions(nil) {
		t.Errorf("merged instructions\n%s\nwant\n%s", got, set.Instructions(nil))
	}
}

// A skill of a group the fleet does not know is left out, not fatal.
func TestFleetSkillUnknownGroup(t *testing.T) {
	s := kvTestServer(t)
	f := startFleet(t, kvTestConn(t, s), FleetConfig{})
	ann := Announcement{Format: AnnounceFormat, Instance: "w9", EpochMS: 1, Seq: 1, IntervalMS: 60000,
		Groups: []AnnouncedGroup{}, Tools: []AnnouncedTool{},
		Skills: []AnnouncedSkill{{Name: "ghost", Description: "d", Group: "nowhere", Dir: "/x"}, {Name: "ok", Description: "d", Group: "basic", Dir: "/y"}}}
	nc := kvTestConn(t, s)
	if err := nc.Publish(SubjectAnnounce+".w9", mustMsgpack(t, ann)); err != nil {
		t.Fatal(err)
	}
	fleetWaitFor(t, "w9", func() bool { return len(f.Instances()) == 1 })
	got := f.Skills()
	if len(got) != 1 || got[0].Name != "ok" {
		t.Errorf("skills %+v, want only ok", got)
	}
}

// An announcer's permission defaults reach the fleet's instances; changing
// them is a change of the view; the fleet hands out copies.
func TestFleetPermissions(t *testing.T) {
	s := kvTestServer(t)
	f := startFleet(t, kvTestConn(t, s), FleetConfig{})
	perm := &AnnouncedPermissions{Mode: "explore", Deny: []string{"search"}}
	startAnnouncer(t, kvTestConn(t, s), fleetToolkit(t), AnnouncerConfig{Instance: "w1", Interval: time.Hour, Permissions: perm})
	startAnnouncer(t, kvTestConn(t, s), fleetToolkit(t), AnnouncerConfig{Instance: "w2", Interval: time.Hour})
	fleetWaitFor(t, "w1 and w2", func() bool { return len(f.Instances()) == 2 })
	in := f.Instances()
	if in[0].ID != "w1" || in[0].Permissions == nil || in[0].Permissions.Mode != "explore" || !slices.Equal(in[0].Permissions.Deny, []string{"search"}) {
		t.Errorf("w1 permissions: %+v", in[0].Permissions)
	}
	if in[1].Permissions != nil {
		t.Errorf("w2 checks nothing, got %+v", in[1].Permissions)
	}
	in[0].Permissions.Deny[0] = "changed"
	if got := f.Instances()[0].Permissions.Deny[0]; got != "search" {
		t.Errorf("Instances shares its permissions: %q", got)
	}
	a, b := Announcement{Permissions: perm}, Announcement{Permissions: &AnnouncedPermissions{Mode: "default"}}
	if sameTools(a, b) {
		t.Error("different permissions compare as the same announcement")
	}
}

// A worker serves its skills' bodies; a fleet finds which instances
// declare a visible skill; FetchSkill asks them.
func TestFetchSkill(t *testing.T) {
	s := kvTestServer(t)
	root := t.TempDir()
	tk, set := skillWorker(t, root)
	f := startFleet(t, kvTestConn(t, s), FleetConfig{})
	startAnnouncer(t, kvTestConn(t, s), tk, AnnouncerConfig{Instance: "w1", Interval: time.Hour, Skills: set})
	sub, err := ServeSkills(kvTestConn(t, s), "w1", set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if _, err := ServeSkills(kvTestConn(t, s), "not a token", set); err == nil {
		t.Error("ServeSkills accepted an invalid instance id")
	}
	fleetWaitFor(t, "w1", func() bool { return len(f.Skills()) == 2 })
	nc := kvTestConn(t, s)
	ctx := kvTestCtx(t)

	sources := []struct {
		name   string
		active []string
		group  string
		ok     bool
	}{
		{"pdf", nil, "basic", true},
		{"scrape", []string{"web"}, "web", true},
		{"scrape", nil, "", false}, // web inactive
		{"nope", []string{"web"}, "", false},
	}
	for _, c := range sources {
		group, ids, ok := f.SkillSources(c.name, c.active)
		if ok != c.ok || group != c.group || (ok && !slices.Equal(ids, []string{"w1"})) {
			t.Errorf("SkillSources(%s, %v) = %q %v %v; want %q [w1] %v", c.name, c.active, group, ids, ok, c.group, c.ok)
		}
	}

	fetches := []struct {
		instances   []string
		name, group string
		body        string
		err         string
	}{
		{[]string{"w1"}, "pdf", "basic", "# PDF", ""},
		{[]string{"w1"}, "pdf", "", "# PDF", ""},
		{[]string{"w1"}, "scrape", "web", "# Scrape", ""},
		{[]string{"gone", "w1"}, "scrape", "web", "# Scrape", ""}, // the first does not answer
		{[]string{"w1"}, "scrape", "basic", "", "SkillNotFoundError: Skill 'scrape' not found."},
		{[]string{"w1"}, "", "basic", "", "invalid request"},
		{nil, "pdf", "basic", "", "no instance declares"},
	}
	for _, c := range fetches {
		body, err := FetchSkill(ctx, nc, c.instances, c.name, c.group)
		if body != c.body || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("FetchSkill(%v, %q, %q) = %q, %v; want %q, %q", c.instances, c.name, c.group, body, err, c.body, c.err)
		}
	}
}
