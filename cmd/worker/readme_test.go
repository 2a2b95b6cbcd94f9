package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// TestReadmeConfiguration: the README's configuration example is the
// example config the tests validate, and its first screen still opens with
// the two set-up commands.
func TestReadmeConfiguration(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../config/testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(example)+"```\n") {
		t.Error("README.md's Configuration example differs from config/testdata/example.yaml")
	}
	setup := "```sh\ngo run ./cmd/worker "
	if i := strings.Index(string(readme), setup); i < 0 || strings.Count(string(readme[:i]), "\n") > 20 {
		t.Error("README.md does not open with `go run ./cmd/worker`")
	}
	for _, section := range []string{"## Calling tools", "## Configuration", "## Scaling out", "## Security", "## Skills", "## Permissions", "## MCP"} {
		if !strings.Contains(string(readme), "\n"+section+"\n") {
			t.Errorf("README.md has no %q section", section)
		}
	}
}

// TestReadmeYAMLSnippets: every configuration the README shows (the
// Skills, Permissions and MCP sections' beside the complete example,
// which TestReadmeConfiguration holds to config/testdata/example.yaml)
// is one the worker accepts: a key renamed or a value refused would
// otherwise leave a reader copying a snippet the worker stops at.
func TestReadmeYAMLSnippets(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../config/testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```\n").FindAllSubmatch(readme, -1)
	n := 0
	for _, b := range blocks {
		if string(b[1]) == string(example) {
			continue
		}
		n++
		if _, err := config.Parse("README.md", b[1]); err != nil {
			t.Errorf("the worker refuses the README's configuration\n%s\n%v", b[1], err)
		}
	}
	if n < 4 {
		t.Errorf("found %d YAML snippets besides the complete example, want the Skills, Permissions and MCP sections' (4)", n)
	}
}

// TestReadmeConfigError: the README's example of a configuration the
// worker refuses is, line for line, what the worker prints for a file
// with the unknown key "bogus" on its line 3; the list of the keys
// allowed there would otherwise drift as keys come.
func TestReadmeConfigError(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```\n\\$ go run ./cmd/worker --config worker.yaml\n(.*?)```\n").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md shows no output of go run ./cmd/worker --config worker.yaml")
	}
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "worker.yaml"), "instance: w1\nqueue_group: toolbus\nbogus: 1\n")
	cmd := exec.Command(workerBin, "--config", "worker.yaml")
	cmd.Dir, cmd.Env = dir, cleanEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || stderr.String() != string(m[1]) {
		t.Errorf("%v, stderr\n%s\nwant exit 2 and the README's\n%s", err, stderr.String(), m[1])
	}
}
