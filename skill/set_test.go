package skill

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

func newSet(t *testing.T, opts *Options) *Set {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := NewSet(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAdd(t *testing.T, s *Set, group string, src Source) {
	t.Helper()
	if err := s.Add(group, src); err != nil {
		t.Fatal(err)
	}
}

func sk(name, desc, dir string) Skill {
	return Skill{Name: name, Description: desc, Dir: dir}
}

// Port of 2.x toolkit_skill_test test_init_with_various_types: a path, a
// loader and a direct skill, rendered exactly.
func TestInstructionsExactText(t *testing.T) {
	skillDir := t.TempDir()
	writeSkill(t, skillDir, skillDoc("path_skill", "A skill loaded from a path", "body"))
	s := newSet(t, nil)
	if _, err := s.AddDir("", skillDir, nil); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "", Static{sk("loader_skill", "A skill from loader", "/loader/dir")})
	mustAdd(t, s, "", Static{sk("direct_skill", "A directly provided skill", "/direct/dir")})

	want := `<agent-skills>
Skills are a collection of instructions, scripts, and resources to extend your capabilities.

**IMPORTANT**: Skills are NOT tools, and you cannot call a skill directly. To use a skill, you MUST use the ` + "`Skill`" + ` tool to read the skill's full instructions, and then follow those instructions to use the tools and resources provided by the skill.

# Available Skills:
<skill>
<name>path_skill</name>
<description>A skill loaded from a path</description>
<dir>` + skillDir + `</dir>
</skill>
<skill>
<name>loader_skill</name>
<description>A skill from loader</description>
<dir>/loader/dir</dir>
</skill>
<skill>
<name>direct_skill</name>
<description>A directly provided skill</description>
<dir>/direct/dir</dir>
</skill>
</agent-skills>`
	if got := s.Instructions(nil); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := Render(s.Available(nil)); got != want {
		t.Fatalf("Render differs from Set.Instructions:\n%s", got)
	}
}

func TestInstructionsEmpty(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*Set)
	}{
		{"no skills", func(*Set) {}},
		{"empty source", func(s *Set) { mustAdd(t, s, "", Static{}) }},
		{"empty directory", func(s *Set) {
			if _, err := s.AddDir("", t.TempDir(), nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing directory", func(s *Set) {
			if _, err := s.AddDir("", filepath.Join(t.TempDir(), "nope"), nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"only an inactive group", func(s *Set) { mustAdd(t, s, "repair", Static{sk("a", "b", "/c")}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(t, nil)
			tt.setup(s)
			if got := s.Instructions([]string{}); got != "" {
				t.Fatalf("got %q, want empty", got)
			}
		})
	}
	if Render(nil) != "" {
		t.Fatal("Render(nil) is not empty")
	}
}

func TestInstructionsMultipleSources(t *testing.T) {
	s := newSet(t, nil)
	mustAdd(t, s, "", Static{sk("skill_x", "desc", "/tmp")})
	mustAdd(t, s, "", Static{sk("skill_y", "desc", "/tmp")})
	got := s.Instructions(nil)
	if i, j := strings.Index(got, "<name>skill_x</name>"), strings.Index(got, "<name>skill_y</name>"); i < 0 || j < i {
		t.Fatalf("skills missing or out of order:\n%s", got)
	}
}

// Port of test_get_skill_instructions_filters_inactive_group_skills and
// _includes_tool_group_skills.
func TestGroupFiltering(t *testing.T) {
	s := newSet(t, nil)
	mustAdd(t, s, "", Static{sk("basic_skill", "always", "/b")})
	mustAdd(t, s, "repair", Static{sk("repair_skill", "repairs", "/r")})
	mustAdd(t, s, "web", Static{sk("web_skill", "browses", "/w")})
	tests := []struct {
		name   string
		active []string
		want   string
	}{
		{"empty is basic only", []string{}, "basic_skill"},
		{"one group", []string{"repair"}, "basic_skill,repair_skill"},
		{"group order, not argument order", []string{"web", "repair"}, "basic_skill,repair_skill,web_skill"},
		{"unknown groups ignored", []string{"nope"}, "basic_skill"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(names(s.Available(tt.active)), ","); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			instr := s.Instructions(tt.active)
			for _, n := range strings.Split(tt.want, ",") {
				if !strings.Contains(instr, "<name>"+n+"</name>") {
					t.Fatalf("instructions lack %s:\n%s", n, instr)
				}
			}
			if !slicesContain(tt.active, "repair") && strings.Contains(instr, "repair_skill") {
				t.Fatalf("inactive group's skill shown:\n%s", instr)
			}
		})
	}
	if got := strings.Join(names(s.All()), ","); got != "basic_skill,repair_skill,web_skill" {
		t.Fatalf("All = %s", got)
	}
	// Available(nil) is basic only (a session with no active group);
	// Instructions(nil) is every group, as AgentScope 2.x's groups=None.
	if got := strings.Join(names(s.Available(nil)), ","); got != "basic_skill" {
		t.Fatalf("Available(nil) = %s", got)
	}
	if all := s.Instructions(nil); !strings.Contains(all, "<name>repair_skill</name>") || !strings.Contains(all, "<name>web_skill</name>") || all != s.Render(s.All()) {
		t.Fatalf("Instructions(nil) is not every group's:\n%s", all)
	}
	for _, sk := range s.All() {
		if sk.Group == "" {
			t.Fatalf("skill %s has no group", sk.Name)
		}
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDuplicateNameReplacesInPlace(t *testing.T) {
	log, buf := newLogger(t)
	s := newSet(t, &Options{Logger: log})
	mustAdd(t, s, "", Static{sk("dup", "first", "/dir1"), sk("other", "x", "/o")})
	mustAdd(t, s, "", Static{sk("dup", "second", "/dir2")})
	for range 2 {
		got := s.Available(nil)
		if len(got) != 2 || got[0].Name != "dup" || got[0].Description != "second" || got[0].Dir != "/dir2" || got[1].Name != "other" {
			t.Fatalf("got %+v", got)
		}
	}
	if n := strings.Count(buf.String(), "duplicate skill name"); n != 1 {
		t.Fatalf("warned %d times, want once:\n%s", n, buf.String())
	}
}

func TestCustomTemplate(t *testing.T) {
	s := newSet(t, &Options{InstructionTemplate: `Use {{.SkillViewer}}:{{range .Skills}} {{.Name}}({{.Group}}){{end}}`})
	mustAdd(t, s, "", Static{sk("a", "d", "/a"), sk("b", "d", "/b")})
	if got, want := s.Instructions(nil), "Use Skill: a(basic) b(basic)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := s.Render(nil); got != "" {
		t.Fatalf("no skills rendered %q", got)
	}
}

func TestBadInput(t *testing.T) {
	for _, tmpl := range []string{"{{.Skills", "{{.Nope}}", "{{range .Skills}}{{.Name.Bad}}{{end}}"} {
		if _, err := NewSet(&Options{InstructionTemplate: tmpl}); err == nil {
			t.Errorf("template %q accepted", tmpl)
		}
	}
	s := newSet(t, nil)
	if err := s.Add("bad group!", Static{}); err == nil {
		t.Error("invalid group name accepted")
	}
	if err := s.Add("g", nil); err == nil {
		t.Error("nil source accepted")
	}
	if len(s.Groups()) != 0 {
		t.Errorf("a rejected Add left groups %v", s.Groups())
	}
}

func TestSetWarnings(t *testing.T) {
	root := t.TempDir()
	bad := writeSkill(t, filepath.Join(root, "bad"), "---\nname: x\n---\n")
	s := newSet(t, nil)
	if _, err := s.AddDir("", root, &LoaderOptions{ScanSubdirs: true}); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(root, "missing")
	if _, err := s.AddDir("", missing, nil); err != nil {
		t.Fatal(err)
	}
	warns := s.Warnings()
	if len(warns) != 2 || warns[0].Path != bad || warns[1].Path != missing {
		t.Fatalf("warnings %v", warns)
	}
	if !strings.Contains(warns[0].Reason, `"description"`) {
		t.Fatalf("reason %q does not name the field", warns[0].Reason)
	}
}

var _ Source = (*Loader)(nil)
var _ Source = Static(nil)

// A client that only has a worker's catalog renders the same instructions
// as the worker.
func TestCatalogVisible(t *testing.T) {
	s := newSet(t, nil)
	mustAdd(t, s, "", Static{{Name: "a", Description: "d", Dir: "/a", Markdown: "secret body", Metadata: map[string]any{"x": 1}}})
	mustAdd(t, s, "repair", Static{sk("r", "d", "/r"), sk("a", "override", "/a2")})
	cat := s.Catalog()
	for _, c := range cat {
		if c.Markdown != "" || c.Metadata != nil || c.Group == "" {
			t.Fatalf("catalog entry %+v", c)
		}
	}
	for _, active := range [][]string{{}, {"repair"}, {"other"}} {
		if got, want := Render(Visible(cat, active)), s.Instructions(active); got != want {
			t.Fatalf("active %v: client renders\n%s\nworker renders\n%s", active, got, want)
		}
	}
}

// TestRemoveSkillTakesItOutOfEveryGroup: a removed skill is gone from the
// instructions, the viewer's lookups and the catalog, in every group; an
// unknown name reports false.
func TestRemoveSkillTakesItOutOfEveryGroup(t *testing.T) {
	s := newSet(t, nil)
	mustAdd(t, s, "", Static{sk("skill_x", "desc", "/x"), sk("skill_y", "desc", "/y")})
	mustAdd(t, s, "web", Static{sk("skill_x", "again", "/x2")})
	if !s.Remove("skill_x") {
		t.Fatal("Remove(skill_x) = false")
	}
	got := s.Instructions([]string{"web"})
	if strings.Contains(got, "skill_x") || !strings.Contains(got, "skill_y") {
		t.Fatalf("instructions after the removal:\n%s", got)
	}
	if _, ok := s.Find("skill_x", []string{"web"}); ok {
		t.Error("Find still finds skill_x")
	}
	for _, c := range s.Catalog() {
		if c.Name == "skill_x" {
			t.Errorf("catalog still has %+v", c)
		}
	}
	if s.Remove("nope") {
		t.Error("Remove(nope) = true")
	}
}

// TestRemovedSkillRegisteredAgain: a skill removed and then added again
// (AgentScope 1.x remove_agent_skill, then register_agent_skill of the
// same folder) is back; the source it was removed from still hides it.
// The removal hid the name for good, from every source added later too.
func TestRemovedSkillRegisteredAgain(t *testing.T) {
	s := newSet(t, nil)
	dir := t.TempDir()
	writeSkill(t, dir, skillDoc("pdf", "Fill PDF forms.", "# PDF"))
	if _, err := s.AddDir("", dir, nil); err != nil {
		t.Fatal(err)
	}
	if !s.Remove("pdf") {
		t.Fatal("Remove(pdf) = false")
	}
	if got := s.Instructions([]string{}); got != "" {
		t.Fatalf("after the removal:\n%s", got)
	}
	if _, err := s.AddDir("", dir, nil); err != nil {
		t.Fatal(err)
	}
	got := s.Available(nil)
	if len(got) != 1 || got[0].Name != "pdf" || got[0].Markdown != "# PDF" {
		t.Fatalf("added again after the removal: %+v", got)
	}
	if sk, ok := s.Find("pdf", nil); !ok || sk.Markdown != "# PDF" {
		t.Errorf("Find(pdf) after it was added again: %+v %v", sk, ok)
	}
	// Removed again: gone from both sources.
	if !s.Remove("pdf") || len(s.All()) != 0 {
		t.Errorf("removed again: %+v", s.All())
	}
}
