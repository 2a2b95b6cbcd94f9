package permission

import "testing"

// TestSplitFilterSortCompressor: split --filter=COMMAND runs COMMAND by
// the shell for each piece, and sort --compress-program=PROG runs PROG
// for its temporary files, but no rule saw them: "split:*" allowed
// "split --filter='rm -rf x' big", and a deny rule on rm did not see
// it. They are now commands of the line; a shell given the data (split
// --filter=sh) runs what cannot be read here.
func TestSplitFilterSortCompressor(t *testing.T) {
	denyRulesSee(t, []string{
		"split --filter='rm -rf x' big",
		"split -b 1M --filter 'rm -rf x' big",
		"split --fil='rm -rf x' big",
		"split -n l/2 big --filter='gzip > $FILE.gz; rm -rf x'",
		"sort --compress-program=rm a.txt",
		"sort --compress-program /bin/rm a.txt",
		"sort -S 1M --compress=rm a.txt",
	}, nil, []string{
		"split -b 1M big part-",
		"sort -o out.txt a.txt",
	})
	p := Policy{Rules: shellAllowRules(t, "split", "sort", "gzip")}
	for _, c := range []struct {
		line string
		want Behavior
	}{
		{"split --filter='rm -rf x' big", Ask},
		{"split --filter=sh big", Ask},
		{"split --filter='gzip -9' big", Allow},
		{"split -b 1M big part-", Allow},
		{"sort --compress-program=./zip a.txt", Ask},
		{"sort --compress-program=bash a.txt", Ask},
		{"sort --compress-program=gzip a.txt", Allow},
		{"sort -u a.txt", Allow},
	} {
		if d := Decide(p, shell, cmd(c.line)); d.Behavior != c.want {
			t.Errorf("%q: %s (%s), want %s", c.line, d.Behavior, d.Reason, c.want)
		}
	}
}
