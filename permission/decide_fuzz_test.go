package permission

import (
	"strings"
	"testing"
)

// FuzzDecideShell: any command line a model sends gets a decision of one
// of the three behaviors, with a message, the same each time; a deny
// rule on the tool's name denies it whatever the line says, and one on
// "rm" denies it when the line ends by running rm (unless a here-document
// left open makes that its body).
func FuzzDecideShell(f *testing.F) {
	for _, s := range []string{
		"ls -la", "git status; rm -rf x", "echo $'a\\'b' | sh", "cat <<EOF\nrm x\nEOF",
		"f(){ rm -rf x; }; f", "sudo -u root sh -c 'rm -rf /'", "echo {rm,} x", "$(echo $(echo `rm x`))",
		"find . -exec rm {} \\;", "X=1 bash <<< 'rm x'", "case a in a) rm x;; esac", "echo \"unterminated",
	} {
		f.Add(s, uint8(0))
	}
	shell := tool(ShellTool, false)
	modes := []Mode{ModeDefault, ModeAcceptEdits, ModeExplore, ModeBypass, ModeDontAsk}
	f.Fuzz(func(t *testing.T, line string, mode uint8) {
		p := Policy{Mode: modes[int(mode)%len(modes)], WorkingDirs: []string{"/work"},
			Rules: []Rule{{Tool: ShellTool, Pattern: "git status:*", Behavior: Allow}, {Tool: ShellTool, Pattern: "/tmp/*", Behavior: Ask}}}
		in := map[string]any{"command": line}
		d := Decide(p, shell, in)
		switch d.Behavior {
		case Allow, Deny, Ask:
		default:
			t.Fatalf("%q: behavior %q", line, d.Behavior)
		}
		if d.Message == "" {
			t.Fatalf("%q: no message", line)
		}
		if again := Decide(p, shell, in); again.Behavior != d.Behavior || again.Message != d.Message {
			t.Fatalf("%q: decided %s, then %s", line, d.Behavior, again.Behavior)
		}
		for _, r := range d.Suggested {
			if err := r.Validate(); err != nil {
				t.Fatalf("%q: suggested %v: %v", line, r, err)
			}
		}
		byName := Policy{Mode: ModeBypass, Rules: []Rule{{Tool: ShellTool, Behavior: Deny}}}
		if d := Decide(byName, shell, in); d.Behavior != Deny {
			t.Fatalf("%q: a deny rule on the tool decided %s", line, d.Behavior)
		}
		if strings.Contains(line, "<<") {
			return // a here-document left open takes the rest as its body, which need not run
		}
		rm := Policy{Mode: ModeBypass, Rules: []Rule{{Tool: ShellTool, Pattern: "rm:*", Behavior: Deny}}}
		if d := Decide(rm, shell, map[string]any{"command": line + "\n\nrm -rf x"}); d.Behavior == Allow {
			t.Fatalf("%q then rm: allowed", line)
		}
	})
}

// FuzzParseRule: a rule written as TOOL or TOOL:PATTERN is refused with
// an error, or read as a rule that validates and is written back as it
// reads.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"execute_shell_command", "execute_shell_command:git push:*", "view_text_file: /etc/** ", "x:", ":y", " a\t:\u00a0b", "a:b\n"} {
		f.Add(s, "allow")
	}
	f.Fuzz(func(t *testing.T, spec, behavior string) {
		r, err := ParseRule(spec, Behavior(behavior))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("%q: the rule read does not validate: %v", spec, err)
		}
		again, err := ParseRule(r.String(), r.Behavior)
		if err != nil || again != r {
			t.Fatalf("%q: read as %+v, written %q, read again as %+v, %v", spec, r, r.String(), again, err)
		}
	})
}
