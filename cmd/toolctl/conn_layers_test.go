package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestConnFlagsEitherSideOfCommand: the connection flags mean the same
// before and after the command. An authentication given by flag beside
// another one in the environment (NATS_TOKEN left exported, --user given)
// is refused, naming both, wherever the flag is; after the command the
// variable was dropped without a word, and the command connected with
// the flag's.
func TestConnFlagsEitherSideOfCommand(t *testing.T) {
	t.Setenv("NATS_TOKEN", "t0ken")
	const unreachable = "nats://127.0.0.1:1" // nothing is reached: the settings are refused first
	for _, args := range [][]string{
		{"--nats", unreachable, "--user", "u", "--password", "p", "tools"},
		{"--nats", unreachable, "tools", "--user", "u", "--password", "p"},
		{"tools", "--nats", unreachable, "--user", "u", "--password", "p"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "env NATS_TOKEN: nats.token: more than one way to authenticate") {
			t.Errorf("toolctl %s: exit %d\n%s", strings.Join(args, " "), code, &errb)
		}
	}
	// A flag after the command still beats the same flag before it.
	t.Setenv("NATS_TOKEN", "")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--nats", "http://bad", "tools", "--nats", unreachable}, strings.NewReader(""), &out, &errb)
	if code != exitNoNATS {
		t.Errorf("--nats before and after the command: exit %d\n%s", code, &errb)
	}
}
