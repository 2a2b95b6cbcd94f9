package main

import (
	"context"
	"strings"
	"testing"
)

// TestCallInputAtWithoutFile: call NAME @ (@"$FILE" with FILE unset) is
// bad input that says a file name is missing; it said "reading the input:
// open : no such file or directory".
func TestCallInputAtWithoutFile(t *testing.T) {
	_, _, err := readInput("@", strings.NewReader(""))
	if err == nil || !strings.Contains(err.Error(), "@ needs a file name") {
		t.Errorf("readInput(@) = %v; want it to say @ needs a file name", err)
	}
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "call", "echo", "@"}, strings.NewReader(""), &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "@ needs a file name") {
		t.Errorf("call echo @: exit %d %q", code, errb.String())
	}
}
