package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// skillsConfig writes a worker config with two skill directories (pdf in
// basic, scrape in group research) and a bad SKILL.md, and returns its
// path and the directory of the skills.
func skillsConfig(t *testing.T) (cfg, root string) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{"skills/pdf", "skills/bad", "research"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(root, "skills", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Fill and merge PDF forms.\n---\n# PDF\nUse scripts/fill.py to fill a form.\n")
	mustWrite(t, filepath.Join(root, "skills", "bad", "SKILL.md"), "---\nname: bad\n---\nno description\n")
	mustWrite(t, filepath.Join(root, "research", "SKILL.md"), "---\nname: scrape\ndescription: Scrape web pages politely.\n---\n# Scrape\nRespect robots.txt.\n")
	cfg = filepath.Join(root, "worker.yaml")
	mustWrite(t, cfg, `groups:
  - name: research
    description: Research tools.
skills:
  - dir: skills
    scan_subdirs: true
  - dir: research
    group: research
`)
	return cfg, root
}

// agentSkills is the exact prompt for the skills, as AgentScope renders it.
func agentSkills(skills ...[3]string) string {
	var b strings.Builder
	b.WriteString("<agent-skills>\nSkills are a collection of instructions, scripts, and resources to extend your capabilities.\n\n" +
		"**IMPORTANT**: Skills are NOT tools, and you cannot call a skill directly. To use a skill, you MUST use the `Skill` tool to read the skill's full instructions, and then follow those instructions to use the tools and resources provided by the skill.\n\n" +
		"# Available Skills:")
	for _, s := range skills {
		b.WriteString("\n<skill>\n<name>" + s[0] + "</name>\n<description>" + s[1] + "</description>\n<dir>" + s[2] + "</dir>\n</skill>")
	}
	b.WriteString("\n</agent-skills>\n")
	return b.String()
}

func TestSkills(t *testing.T) {
	cfg, root := skillsConfig(t)

	// --check-config reports the bad SKILL.md and still accepts the config.
	check := startProc(t, cleanEnv(t), workerBin, "--check-config", "--config", cfg)
	if code := check.exit(t); code != 0 {
		t.Fatalf("--check-config exit %d:\n%s\n%s", code, check.stdout, check.stderr)
	}
	bad := filepath.Join(root, "skills", "bad", "SKILL.md")
	if want := "warning: skill skipped: " + bad + ": "; !strings.Contains(check.stdout.String(), want) || !strings.Contains(check.stdout.String(), `"description"`) {
		t.Errorf("--check-config output does not report %s with its reason:\n%s", bad, check.stdout)
	}

	// The worker starts anyway, and warns.
	w := startWorker(t, "--config", cfg)
	if !strings.Contains(w.stderr.String(), bad) {
		t.Errorf("the worker did not warn about %s:\n%s", bad, w.stderr)
	}
	pdf := [3]string{"pdf", "Fill and merge PDF forms.", filepath.Join(root, "skills", "pdf")}
	scrape := [3]string{"scrape", "Scrape web pages politely.", filepath.Join(root, "research")}

	if _, se, code := toolctl(t, w.url, "groups", "set", "--session", "researcher", "research"); code != 0 {
		t.Fatalf("groups set: exit %d: %s", code, se)
	}
	tests := []struct {
		name    string
		session string
		want    string
	}{
		{"basic only", "newcomer", agentSkills(pdf)},
		{"research active", "researcher", agentSkills(pdf, scrape)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, se, code := toolctl(t, w.url, "skills", "--session", tt.session)
			if code != 0 || out != tt.want {
				t.Errorf("toolctl skills --session %s: exit %d, stderr %s\ngot:\n%s\nwant:\n%s", tt.session, code, se, out, tt.want)
			}
		})
	}
	out, _, code := toolctl(t, w.url, "skills")
	if code != 0 || !strings.Contains(out, "pdf     basic") || !strings.Contains(out, "scrape  research") {
		t.Errorf("toolctl skills: exit %d\n%s", code, out)
	}

	// The viewer tool, through the bus.
	calls := []struct {
		name    string
		session string
		input   string
		code    int
		stdout  string
		stderr  string
	}{
		{"basic skill", "newcomer", `{"skill":"pdf"}`, 0, "# PDF\nUse scripts/fill.py to fill a form.\n", ""},
		{"group skill, group active", "researcher", `{"skill":"scrape"}`, 0, "# Scrape\nRespect robots.txt.\n", ""},
		{"group skill, group inactive", "newcomer", `{"skill":"scrape"}`, 1, "SkillNotFoundError: Skill 'scrape' not found.\n", "code tool_error"},
		{"unknown skill", "newcomer", `{"skill":"nope"}`, 1, "SkillNotFoundError: Skill 'nope' not found.\n", "code tool_error"},
		{"skipped skill", "newcomer", `{"skill":"bad"}`, 1, "SkillNotFoundError: Skill 'bad' not found.\n", "code tool_error"},
		{"no skill named", "newcomer", `{}`, 1, "", "code invalid_input"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			so, se, code := toolctl(t, w.url, "call", "--session", c.session, "Skill", c.input)
			if code != c.code || (c.stdout != "" && so != c.stdout) || !strings.Contains(se, c.stderr) {
				t.Errorf("call Skill %s: exit %d (want %d)\nstdout %q (want %q)\nstderr %s (want %q in it)", c.input, code, c.code, so, c.stdout, se, c.stderr)
			}
		})
	}

	// A caller identity's session: the viewer reads that identity's groups.
	if _, se, code := toolctl(t, w.url, "--identity", "alice", "groups", "set", "--session", "alices", "research"); code != 0 {
		t.Fatalf("groups set as alice: exit %d: %s", code, se)
	}
	if so, se, code := toolctl(t, w.url, "--identity", "alice", "call", "--session", "alices", "Skill", `{"skill":"scrape"}`); code != 0 || so != "# Scrape\nRespect robots.txt.\n" {
		t.Errorf("call Skill scrape as alice in her session with research active: exit %d\nstdout %q\nstderr %s", code, so, se)
	}

	// An edited skill shows without a restart.
	mustWrite(t, filepath.Join(root, "skills", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Fill, merge and split PDF forms.\n---\n# PDF v2\n")
	edited := agentSkills([3]string{"pdf", "Fill, merge and split PDF forms.", pdf[2]})
	natstest.WaitFor(t, "the edited skill in toolctl skills", func() bool {
		out, _, _ := toolctl(t, w.url, "skills", "--session", "newcomer")
		return out == edited
	})
	if so, _, code := toolctl(t, w.url, "call", "Skill", `{"skill":"pdf"}`); code != 0 || so != "# PDF v2\n" {
		t.Errorf("the viewer after the edit: exit %d, %q", code, so)
	}
}

// TestSkillsAcrossWorkers: two workers declare different skills; the
// Skill tool answers for both whichever worker gets the call, and the
// fleet's prompt lists both.
func TestSkillsAcrossWorkers(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/alpha", "b/beta"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(root, "a", "alpha", "SKILL.md"), "---\nname: alpha\ndescription: Only on wa.\n---\n# Alpha body\n")
	mustWrite(t, filepath.Join(root, "b", "beta", "SKILL.md"), "---\nname: beta\ndescription: Only on wb.\n---\n# Beta body\n")
	cfgA, cfgB := filepath.Join(root, "a.yaml"), filepath.Join(root, "b.yaml")
	mustWrite(t, cfgA, "skills:\n  - dir: a\n    scan_subdirs: true\n")
	mustWrite(t, cfgB, "skills:\n  - dir: b\n    scan_subdirs: true\n")
	wa := startWorker(t, "--config", cfgA, "--instance", "wa")
	startWorker(t, "--nats", wa.url, "--config", cfgB, "--instance", "wb")

	want := agentSkills([3]string{"alpha", "Only on wa.", filepath.Join(root, "a", "alpha")}, [3]string{"beta", "Only on wb.", filepath.Join(root, "b", "beta")})
	natstest.WaitFor(t, "both workers' skills in the prompt", func() bool {
		out, _, _ := toolctl(t, wa.url, "skills", "--session", "s")
		return out == want
	})
	// Call each skill until each worker has served it at least once (the
	// queue group picks one at random); every call must succeed.
	servedBy := map[string]bool{}
	for i := 0; len(servedBy) < 4; i++ {
		if i == 400 {
			t.Fatalf("after %d calls only %v served", i, servedBy)
		}
		for _, sk := range []string{"alpha", "beta"} {
			final, code := callJSON(t, wa.url, "--session", "s", "Skill", `{"skill":"`+sk+`"}`)
			if code != 0 {
				t.Fatalf("Skill %s: exit %d, %v", sk, code, final)
			}
			worker, _ := metaOf(final, "worker").(string)
			servedBy[sk+"@"+worker] = true
		}
		for _, sk := range []struct{ name, body string }{{"alpha", "# Alpha body\n"}, {"beta", "# Beta body\n"}} {
			if so, _, code := toolctl(t, wa.url, "call", "Skill", `{"skill":"`+sk.name+`"}`); code != 0 || so != sk.body {
				t.Fatalf("Skill %s: exit %d, %q", sk.name, code, so)
			}
		}
	}
}

// TestInstructionsForTheSystemPrompt: toolctl instructions prints what a
// session's system prompt gets: its active groups' instructions (1.x
// get_activated_notes) and its skills prompt.
func TestInstructionsForTheSystemPrompt(t *testing.T) {
	_, root := skillsConfig(t)
	cfg := filepath.Join(root, "notes.yaml")
	mustWrite(t, cfg, `groups:
  - name: research
    description: Research tools.
    instructions: Cite your sources.
skills:
  - dir: skills
    scan_subdirs: true
  - dir: research
    group: research
`)
	w := startWorker(t, "--config", cfg)
	pdf := [3]string{"pdf", "Fill and merge PDF forms.", filepath.Join(root, "skills", "pdf")}
	scrape := [3]string{"scrape", "Scrape web pages politely.", filepath.Join(root, "research")}
	if out, se, code := toolctl(t, w.url, "instructions", "--session", "newcomer"); code != 0 || out != agentSkills(pdf) {
		t.Errorf("newcomer: exit %d, stderr %s\n%s", code, se, out)
	}
	if _, se, code := toolctl(t, w.url, "groups", "set", "--session", "researcher", "research"); code != 0 {
		t.Fatalf("groups set: exit %d: %s", code, se)
	}
	want := "## About Tool Group 'research'\nCite your sources.\n\n" + agentSkills(pdf, scrape)
	if out, se, code := toolctl(t, w.url, "instructions", "--session", "researcher"); code != 0 || out != want {
		t.Errorf("researcher: exit %d, stderr %s\ngot:\n%s\nwant:\n%s", code, se, out, want)
	}
	out, _, code := toolctl(t, w.url, "instructions", "--session", "researcher", "--json")
	var got struct{ Groups, Skills string }
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Groups != "## About Tool Group 'research'\nCite your sources." {
		t.Errorf("--json: exit %d, %v\n%s", code, err, out)
	}
}

// TestSessionStateThroughToolctl: toolctl state export/import (AgentScope
// 1.x state_dict / load_state_dict) move a session's active groups.
func TestSessionStateThroughToolctl(t *testing.T) {
	cfg, root := skillsConfig(t)
	w := startWorker(t, "--config", cfg)
	export := func() string {
		out, se, code := toolctl(t, w.url, "state", "export", "--session", "s1")
		var st struct {
			Active []string `json:"active_groups"`
		}
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Active == nil {
			t.Fatalf("export: exit %d, %v\n%s%s", code, err, out, se)
		}
		return strings.Join(st.Active, ",")
	}
	if got := export(); got != "" {
		t.Fatalf("export of a fresh session: %q", got)
	}
	file := filepath.Join(root, "state.json")
	mustWrite(t, file, `{"active_groups": ["research"]}`)
	if out, se, code := toolctl(t, w.url, "state", "import", "--session", "s1", file); code != 0 || !strings.Contains(out, "[research]") {
		t.Fatalf("import: exit %d %s%s", code, out, se)
	}
	if got := export(); got != "research" {
		t.Fatalf("export after the import: %q", got)
	}
	mustWrite(t, file, `{"active_groups": ["nope"]}`)
	if _, se, code := toolctl(t, w.url, "state", "import", "--session", "s1", file); code == 0 || !strings.Contains(se, "nope") {
		t.Fatalf("import of an unknown group: exit %d %s", code, se)
	}

	// Bad state files are refused with exit 2 and import nothing: one
	// with more after its JSON value (it was imported, the rest ignored),
	// and one over the limit (it said "unexpected EOF").
	mustWrite(t, file, `{"active_groups": []} {"active_groups": ["research"]}`)
	if _, se, code := toolctl(t, w.url, "state", "import", "--session", "s1", file); code != 2 || !strings.Contains(se, "more than one JSON value") {
		t.Errorf("import of two values: exit %d %s", code, se)
	}
	mustWrite(t, file, `{"active_groups": [`+strings.Repeat(`"research",`, 1<<17)+`"research"]}`)
	if _, se, code := toolctl(t, w.url, "state", "import", "--session", "s1", file); code != 2 || !strings.Contains(se, "over the 1048576 bytes a state may be") {
		t.Errorf("import of a state over 1 MiB: exit %d %s", code, se)
	}
	// Nothing was sent: a bad file is refused before NATS is reached.
	if _, se, code := toolctl(t, "nats://127.0.0.1:1", "state", "import", "--session", "s1", file); code != 2 {
		t.Errorf("import of a bad file with no server: exit %d %s", code, se)
	}
	if got := export(); got != "research" {
		t.Fatalf("export after the refused imports: %q", got)
	}
}

// TestSkillNameInTwoGroupsAcrossWorkers: wa declares pdf in basic, wb
// declares another pdf in group forms. A session with forms active sees
// wb's (a later group's skill replaces an earlier one of the same name,
// AgentScope 2.x), in the prompt and from the Skill tool on either
// worker. wa answered with its own basic pdf, as it looked at its own
// skills first: the same call gave one body or the other by the worker
// the queue group picked.
func TestSkillNameInTwoGroupsAcrossWorkers(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/pdf", "b/pdf"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(root, "a", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Basic PDF, on wa.\n---\n# PDF on wa\n")
	mustWrite(t, filepath.Join(root, "b", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: PDF forms, on wb.\n---\n# PDF forms on wb\n")
	groups := "groups:\n  - name: forms\n    description: Form tools.\n"
	cfgA, cfgB := filepath.Join(root, "a.yaml"), filepath.Join(root, "b.yaml")
	mustWrite(t, cfgA, groups+"skills:\n  - dir: a\n    scan_subdirs: true\n")
	mustWrite(t, cfgB, groups+"skills:\n  - dir: b\n    scan_subdirs: true\n    group: forms\n")
	wa := startWorker(t, "--config", cfgA, "--instance", "wa")
	startWorker(t, "--nats", wa.url, "--config", cfgB, "--instance", "wb")
	if _, se, code := toolctl(t, wa.url, "groups", "set", "--session", "filler", "forms"); code != 0 {
		t.Fatalf("groups set: exit %d: %s", code, se)
	}
	want := agentSkills([3]string{"pdf", "PDF forms, on wb.", filepath.Join(root, "b", "pdf")})
	natstest.WaitFor(t, "wb's pdf in the prompt of a session with forms active", func() bool {
		out, _, _ := toolctl(t, wa.url, "skills", "--session", "filler")
		return out == want
	})
	servedBy := map[string]bool{}
	for i := 0; len(servedBy) < 2; i++ {
		if i == 200 {
			t.Fatalf("after %d calls only %v served", i, servedBy)
		}
		final, code := callJSON(t, wa.url, "--session", "filler", "Skill", `{"skill":"pdf"}`)
		worker, _ := metaOf(final, "worker").(string)
		servedBy[worker] = true
		if b, _ := json.Marshal(final); code != 0 || !strings.Contains(string(b), "PDF forms on wb") {
			t.Fatalf("Skill pdf served by %s: exit %d, %s; want wb's pdf, which the prompt lists", worker, code, b)
		}
	}
}
