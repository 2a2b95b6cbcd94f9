package ostest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestModuleBuildsEverywhere: library users import the toolkit, builtin
// and the rest on their laptops, and package builtin did not build for
// Windows (syscall.Kill, Wait4, Flock, Stat_t), nor skill and mcp; the
// tests of several packages did not vet for Windows or macOS. The whole
// module, tests included, vets (so builds) for windows/amd64 and
// darwin/arm64.
func TestModuleBuildsEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the module twice")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	out, err := exec.Command(gobin, "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Skipf("no go command or module here: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	for _, target := range [][2]string{{"windows", "amd64"}, {"darwin", "arm64"}} {
		t.Run(target[0]+"/"+target[1], func(t *testing.T) {
			cmd := exec.Command(gobin, "vet", "./...")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=%s GOARCH=%s go vet ./...: %v\n%s", target[0], target[1], err, out)
			}
		})
	}
}
