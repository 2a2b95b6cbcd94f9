package skill_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
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
// basic, scrape in web.
func skillWorker(t *testing.T, root string) (*toolkit.Toolkit, *skill.Set) {
	t.Helper()
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access."}); err != nil {
		t.Fatal(err)
	}
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

func announce(t *testing.T, nc *nats.Conn, tk *toolkit.Toolkit, instance string, interval time.Duration, set *skill.Set) *discovery.Announcer {
	t.Helper()
	opts := &discovery.AnnouncerOptions{Instance: instance, Interval: interval}
	if set != nil {
		opts.Meta = map[string]func() any{wire.MetaSkills: skill.Announce(set)}
	}
	a, err := discovery.NewAnnouncer(nc, tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	return a
}

func fleet(t *testing.T, nc *nats.Conn) *discovery.Fleet {
	t.Helper()
	f, err := discovery.NewFleet(natstest.Ctx(t), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// The fleet renders exactly what the worker's own skill set renders, for
// a session's active groups, and follows edits of SKILL.md files.
func TestFleetInstructions(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	tk, set := skillWorker(t, root)
	f := fleet(t, natstest.Conn(t, s))
	announce(t, natstest.Conn(t, s), tk, "w1", 50*time.Millisecond, set)
	natstest.WaitFor(t, "the skills", func() bool { return len(skill.FleetSkills(f, nil)) == 2 })
	for _, active := range [][]string{nil, {}, {"web"}} {
		if got, want := skill.FleetInstructions(f, active), set.Instructions(active); got != want || want == "" {
			t.Errorf("active %v: fleet renders\n%s\nthe worker renders\n%s", active, got, want)
		}
	}
	// An edit shows within an announce interval.
	writeSkill(t, filepath.Join(root, "basic", "pdf"), "pdf", "Fill and merge PDF forms, now with more.", "# PDF")
	natstest.WaitFor(t, "the edited skill", func() bool {
		got := skill.FleetInstructions(f, nil)
		return got == set.Instructions(nil) && skill.FleetSkills(f, nil)[0].Description == "Fill and merge PDF forms, now with more."
	})
}

// Two workers declaring the same skills list them once; a worker without
// skills announces none; a fleet without skills renders "".
func TestFleetSkillsMerge(t *testing.T) {
	s := natstest.Server(t)
	tk1, set := skillWorker(t, t.TempDir())
	f := fleet(t, natstest.Conn(t, s))
	bare := announce(t, natstest.Conn(t, s), toolkit.New(nil), "w0", time.Hour, nil)
	if got := bare.Announcement().Meta; got != nil {
		t.Errorf("an announcer without skills announces %v", got)
	}
	natstest.WaitFor(t, "w0", func() bool { return len(f.Instances()) == 1 })
	if got := skill.FleetInstructions(f, nil); got != "" {
		t.Errorf("no skills: %q; want empty", got)
	}
	announce(t, natstest.Conn(t, s), tk1, "w1", time.Hour, set)
	announce(t, natstest.Conn(t, s), tk1, "w2", time.Hour, set)
	natstest.WaitFor(t, "w1 and w2 with their skills", func() bool { return len(f.Instances()) == 3 && len(skill.FleetSkills(f, nil)) == 2 })
	var names []string
	for _, sk := range skill.FleetSkills(f, nil) {
		names = append(names, sk.Group+"/"+sk.Name)
	}
	if want := []string{"basic/pdf", "web/scrape"}; !slices.Equal(names, want) {
		t.Errorf("merged skills %v, want %v", names, want)
	}
	if got := skill.FleetInstructions(f, nil); got != set.Instructions(nil) {
		t.Errorf("merged instructions\n%s\nwant\n%s", got, set.Instructions(nil))
	}
}

// A skill of a group the fleet does not know is left out, not fatal.
func TestFleetSkillUnknownGroup(t *testing.T) {
	s := natstest.Server(t)
	f := fleet(t, natstest.Conn(t, s))
	ann := wire.Announcement{Format: wire.AnnounceFormat, Instance: "w9", EpochMS: 1, Seq: 1, IntervalMS: 60000,
		Groups: []wire.AnnouncedGroup{}, Tools: []wire.AnnouncedTool{},
		Meta: map[string]any{wire.MetaSkills: []any{
			map[string]any{"name": "ghost", "description": "d", "group": "nowhere", "dir": "/x"},
			map[string]any{"name": "ok", "description": "d", "group": "basic", "dir": "/y"},
		}}}
	data, err := wire.Msgpack.Marshal(&ann)
	if err != nil {
		t.Fatal(err)
	}
	if err := natstest.Conn(t, s).Publish(wire.AnnounceSubject("w9"), data); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "w9", func() bool { return len(f.Instances()) == 1 })
	got := skill.FleetSkills(f, nil)
	if len(got) != 1 || got[0].Name != "ok" {
		t.Errorf("skills %+v, want only ok", got)
	}
}

// A worker serves its skills' bodies; a fleet finds which instances
// declare a visible skill; Fetch asks them, in either encoding.
func TestFetch(t *testing.T) {
	s := natstest.Server(t)
	tk, set := skillWorker(t, t.TempDir())
	f := fleet(t, natstest.Conn(t, s))
	announce(t, natstest.Conn(t, s), tk, "w1", time.Hour, set)
	sub, err := skill.Serve(natstest.Conn(t, s), "w1", set, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if _, err := skill.Serve(natstest.Conn(t, s), "not a token", set, nil); err == nil {
		t.Error("Serve accepted an invalid instance id")
	}
	natstest.WaitFor(t, "w1", func() bool { return len(skill.FleetSkills(f, nil)) == 2 })
	nc := natstest.Conn(t, s)
	ctx := natstest.Ctx(t)

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
		group, ids, ok := skill.Sources(f, c.name, c.active)
		if ok != c.ok || group != c.group || (ok && !slices.Equal(ids, []string{"w1"})) {
			t.Errorf("Sources(%s, %v) = %q %v %v; want %q [w1] %v", c.name, c.active, group, ids, ok, c.group, c.ok)
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
		body, err := skill.Fetch(ctx, nc, c.instances, c.name, c.group)
		if body != c.body || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Fetch(%v, %q, %q) = %q, %v; want %q, %q", c.instances, c.name, c.group, body, err, c.body, c.err)
		}
	}

	// The body request in JSON, as a client in another language sends it.
	m, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: wire.SkillSubject("w1"),
		Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}, Data: []byte(`{"name":"pdf"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.Data); got != `{"markdown":"# PDF"}` || m.Header.Get(wire.HeaderContentType) != wire.ContentTypeJSON {
		t.Errorf("JSON reply %s (%v)", got, m.Header)
	}
}

// Skills that would make the announcement too large for the server's
// max_payload are left out of it, with a warning: a worker whose skills
// could not be announced did not start, or, once they grew, stopped
// announcing and dropped out of the fleet with all its tools. A bad
// skill never stops anything.
func TestAnnounceTooManySkills(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "a-huge"), "huge", strings.Repeat("d", 900<<10), "# Huge")
	for i := range 1000 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("s%04d", i)), fmt.Sprintf("s%04d", i), strings.Repeat("d", 200), "# S")
	}
	var logs strings.Builder
	set, err := skill.NewSet(&skill.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
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
	// Reading a thousand skills can take past the announcer's wait for
	// its Meta (1 s) on a loaded machine: the first announcement then
	// goes without them, and they follow as the read ends.
	natstest.WaitFor(t, "w1's skills", func() bool { return len(skill.FleetSkills(f, nil)) > 0 })
	got := skill.FleetSkills(f, nil)
	if len(got) == 0 || len(got) >= 1000 || got[0].Name != "s0000" || slices.ContainsFunc(got, func(sk skill.Skill) bool { return sk.Name == "huge" }) {
		first := ""
		if len(got) > 0 {
			first = got[0].Name
		}
		t.Errorf("announced %d skills, the first %q; want the small ones that fit, from s0000, without huge", len(got), first)
	}
	if !strings.Contains(logs.String(), "left out of the announcement") {
		t.Errorf("no warning about the skills left out; logs:\n%.2000s", logs.String())
	}
}
