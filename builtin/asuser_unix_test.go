//go:build unix

package builtin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// asUser runs the test named test again, in a copy of this test binary,
// as uid with groups, with env set to ws: the child sees env and does
// the test's unprivileged part. The test must run as root (it skips
// otherwise); ws and the copy are made reachable and writable for the
// child.
func asUser(t *testing.T, test, env, ws string, uid uint32, groups ...uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the edit as another user")
	}
	bin := filepath.Join(t.TempDir(), "builtin.test")
	for _, d := range []string{filepath.Dir(ws), ws, filepath.Dir(bin)} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+ws)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: append([]uint32{uid}, groups...)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", test, uid, err, out)
	}
}
