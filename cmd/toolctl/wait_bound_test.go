package main

import (
	"strings"
	"testing"
	"time"
)

// A fleet command's --wait is how long the user asked it to collect the
// workers' answers: the bound on one-shot commands comes on top of it, or
// `tools --wait 40s` would end at 30s saying NATS did not answer.
func TestWaitLongerThanTheOneShotBound(t *testing.T) {
	url := groupsFleet(t)
	defer func(d time.Duration) { opTimeout = d }(opTimeout)
	opTimeout = time.Second
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "--wait", "2s"}, "search"},
		{[]string{"groups", "--wait", "2s"}, "web"},
	} {
		code, out, errs := toolctl(t, append([]string{"--nats", url}, tc.args...)...)
		if code != exitOK || !strings.Contains(out, tc.want) || strings.Contains(errs, "did not answer") {
			t.Errorf("toolctl %s: exit %d\nstdout %s\nstderr %s", strings.Join(tc.args, " "), code, out, errs)
		}
	}
}
