package permission

import "testing"

// TestDateOperandSetsClock: GNU date sets the clock from an operand that
// does not start with "+" (MMDDhhmm[[CC]YY][.ss]) when no option names a
// date, as -s does, while only -s and --set were checked: `date
// 010100002020` was read-only and allowed without asking even in explore
// mode, and sets the clock of a worker running as root.
func TestDateOperandSetsClock(t *testing.T) {
	for _, c := range []string{
		"date 010100002020",
		"date -u 123112592023.59",
		"date -- 0101",
		"date --utc 01010000",
		"date --debug 01010000",
		"date -R 01010000",
		"date -I 01010000",         // -I takes its value attached only
		"date -du @0 01010000",     // "u" is -d's value
		"date --d tomorrow 010100", // --d is --date or --debug: not a value taken here
		"date +%s 0101",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"date",
		"date +%s",
		"date -u '+%Y-%m-%d %H:%M'",
		"date -d tomorrow",
		`date -d "2020-01-01 10:00" +%s`,
		"date -ud @0",
		"date --date=@0 +%F",
		"date --date @0",
		"date --da @0",
		"date -r go.mod",
		"date --ref go.mod +%s",
		"date -f dates.txt",
		"date -Iseconds",
		"date --iso-8601=seconds",
		"date --rfc-3339 seconds",
		"date -R",
	} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
}
