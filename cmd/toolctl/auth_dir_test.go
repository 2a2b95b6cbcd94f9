package main

import (
	"context"
	"strings"
	"testing"
)

// TestAuthInitEmptyDir: auth init --dir "" (--dir "$DIR" with DIR unset)
// is bad usage naming --dir; it failed with "auth: mkdir : no such file or
// directory", which names neither the flag nor what to give.
func TestAuthInitEmptyDir(t *testing.T) {
	var out, errb strings.Builder
	code := run(context.Background(), []string{"auth", "init", "--dir", ""}, strings.NewReader(""), &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "--dir needs a directory") {
		t.Errorf("auth init --dir '': exit %d %q; want exit %d saying --dir needs a directory", code, errb.String(), exitUsage)
	}
}
