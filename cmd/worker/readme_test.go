package main_test

import (
	"os"
	"strings"
	"testing"
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
