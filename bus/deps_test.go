package bus_test

import (
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDependencies keeps the bus a transport: a program that only calls
// tools compiles no NATS server in, and the bus knows nothing of skills
// or permissions (they announce their own parts through discovery).
func TestDependencies(t *testing.T) {
	goTool := runtime.GOROOT() + "/bin/go"
	for pkg, forbidden := range map[string][]string{
		"github.com/toolbus/toolbus/bus":       {"github.com/nats-io/nats-server/v2/server", "github.com/toolbus/toolbus/skill", "github.com/toolbus/toolbus/permission", "github.com/toolbus/toolbus/embedded"},
		"github.com/toolbus/toolbus/bus/wire":  {"github.com/nats-io/nats-server/v2/server", "github.com/toolbus/toolbus/bus"},
		"github.com/toolbus/toolbus/discovery": {"github.com/nats-io/nats-server/v2/server", "github.com/toolbus/toolbus/bus", "github.com/toolbus/toolbus/skill", "github.com/toolbus/toolbus/permission"},
		"github.com/toolbus/toolbus/toolkit":   {"github.com/nats-io/nats.go"},
	} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, f := range forbidden {
			if slices.Contains(deps, f) {
				t.Errorf("%s depends on %s", pkg, f)
			}
		}
	}
}
