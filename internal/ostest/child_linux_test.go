package ostest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInChildEndsWithParent: a child that InChild runs ends when the
// test process running it is killed (as go test's -timeout ends it),
// where it went on running on its own: a child looping on what it
// tested burned a core for more than an hour after its test had timed
// out. The test runs a middle process whose InChild child writes its
// pid and sleeps; the middle one is killed; the child must go.
func TestInChildEndsWithParent(t *testing.T) {
	if os.Getenv("TOOLBUS_TEST_OSTEST_MIDDLE") != "" {
		if !InChild(t, "TOOLBUS_TEST_OSTEST_SLEEPER") {
			return
		}
		if err := os.WriteFile(os.Getenv("TOOLBUS_TEST_OSTEST_PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	middle := exec.Command(os.Args[0], "-test.run=^TestInChildEndsWithParent$", "-test.count=1")
	middle.Env = append(os.Environ(), "TOOLBUS_TEST_OSTEST_MIDDLE=1", "TOOLBUS_TEST_OSTEST_PIDFILE="+pidFile)
	if err := middle.Start(); err != nil {
		t.Fatal(err)
	}
	defer middle.Process.Kill()
	var pid int
	for deadline := time.Now().Add(time.Minute); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child wrote no pid within a minute")
		}
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
		}
	}
	if err := middle.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	middle.Wait()
	for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child (pid %d) was still running a minute after the process running it was killed", pid)
		}
	}
}

// alive reports whether process pid runs (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
