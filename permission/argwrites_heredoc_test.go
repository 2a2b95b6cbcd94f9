package permission

import (
	"slices"
	"testing"
)

// TestSuggestedRulesCoverHereDocumentCommands: for a line whose shell
// runs a here-document's or here-string's body as its script ("bash
// <<< 'rm -rf x'", "bash <<EOF … EOF"), the only rule suggested was the
// shell's ("bash:*"), which does not allow the body's commands, so the
// line asked again once it was added; the rules suggested now cover the
// body's commands too, as for bash -c, and allow the line. A body that
// writes outside the working directories gets no rule (a one-shot
// approval fits).
func TestSuggestedRulesCoverHereDocumentCommands(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"bash <<< 'rm -rf x'", []string{"bash:*", "rm:*"}},
		{"bash <<EOF\nmake\nnpm test\nEOF", []string{"bash:*", "make:*", "npm test:*"}},
		{"bash <<'EOF'\nls\nsudo rm -rf x\nEOF", []string{"bash:*", "sudo rm:*", "rm:*"}},
		{"sh -s <<EOF\nfind . -exec rm {} \\;\nEOF", []string{"sh:*", "find:*", "rm:*"}},
		{"bash -c 'make' <<< 'rm -f x'", []string{"bash:*", "make:*", "rm:*"}},
		{"bash <<< 'ls'", []string{"bash:*"}},
	} {
		d := Decide(Policy{}, shell, cmd(c.line))
		var got []string
		p := Policy{}
		for _, r := range d.Suggested {
			got = append(got, r.Pattern)
			p.Rules = append(p.Rules, r)
		}
		if d.Behavior != Ask || !slices.Equal(got, c.want) {
			t.Errorf("%q: %s, suggested %q, want ask and %q", c.line, d.Behavior, got, c.want)
		}
		if d := Decide(p, shell, cmd(c.line)); d.Behavior != Allow {
			t.Errorf("%q with the suggested rules: %s (%s), want allow", c.line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"bash <<< 'ls > /srv/other/x'",
		"bash <<EOF\nsort -o /srv/other/x y\nEOF",
		"bash <<EOF\ncd /srv/other\nmake > log\nEOF",
		"bash <<EOF\nPS4='x' bash -x y\nEOF",
	} {
		d := Decide(Policy{WorkingDirs: []string{"/srv/app"}}, shell, cmd(line))
		if d.Behavior != Ask || len(d.Suggested) > 0 {
			t.Errorf("%q: %s, suggested %v, want ask and none", line, d.Behavior, d.Suggested)
		}
	}
}
