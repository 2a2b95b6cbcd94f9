package ostest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// InChild reports whether this process is the child that runs t's body;
// if it is not, it runs t again in a child (this test binary, with env
// set to "1", no -test.testlogfile), fails t with the child's output
// (its first 4 KiB) if the child fails or does not run t, skips t if the
// child skipped it, and returns false. For a test that changes what the
// whole process shares (its limits, a subreaper, a recursion that may
// overflow the stack), so that go test's own process, and its log of
// what the tests touched, are left as they were. On Linux the child ends
// with the process that runs it (killed, or ended by go test's
// -timeout), not left running on its own.
func InChild(t testing.TB, env string) bool {
	t.Helper()
	if os.Getenv(env) != "" {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.SysProcAttr = childAttr()
	out, err := cmd.CombinedOutput()
	text := string(out)
	if len(text) > 4096 {
		text = text[:4096] + "…"
	}
	switch {
	case err != nil:
		t.Fatalf("%s in a child process: %v\n%s", t.Name(), err, text)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()):
		t.Skipf("skipped in a child process:\n%s", text)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("%s in a child process ran nothing:\n%s", t.Name(), text)
	}
	return false
}
