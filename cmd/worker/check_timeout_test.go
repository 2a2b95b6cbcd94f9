package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestPermissionCheckTimeoutConfigured: permissions.check_timeout bounds
// the permission check of a call without a deadline of its own. An
// approved call sent again while the cluster has no quorum ends
// unavailable, saying the permission state was unreachable within the
// configured bound, and does not run. The worker's config had no key for
// the bound: every check waited the package's default, 30s.
func TestPermissionCheckTimeoutConfigured(t *testing.T) {
	cl := natstest.NewCluster(t)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, `builtins:
  tools: [{name: echo}]
permissions:
  ask: [echo]
  check_timeout: 2500ms
`)
	w := startWorker(t, "--nats", cl.URLs(), "--kv-replicas", "3", "--config", cfg, "--instance", "w1")
	if !strings.Contains(w.stderr.String(), `"check_timeout":"2.5s"`) {
		t.Errorf("the permission start line does not give the check's bound:\n%s", w.stderr)
	}
	in := `{"text":"hi"}`
	final, code := callJSON(t, w.url, "--session", "s", "--id", "c1", "echo", in)
	if code != 3 || final["code"] != "approval_required" {
		t.Fatalf("first call: exit %d, final %v; want exit 3, approval_required", code, final)
	}
	if out, se, code := toolctl(t, w.url, "approve", "c1", "--by", "op"); code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", code, out, se)
	}

	// The node the worker is connected to stays up, the others stop:
	// calls reach the worker, its permission state has no leader.
	restore := cl.LoseQuorum()
	defer restore()
	var url string
	for _, n := range cl.Nodes() {
		if n != nil {
			url = n.ClientURL()
		}
	}
	final, _ = callJSON(t, url, "--session", "s", "--id", "c1", "echo", in)
	b, _ := json.Marshal(final)
	text := string(b)
	if final["code"] != "unavailable" || !strings.Contains(text, "unreachable") || !strings.Contains(text, "within 2.5s") {
		t.Fatalf("the approved call without a leader ended %v; want unavailable, the permission state unreachable within 2.5s (permissions.check_timeout)", final)
	}
}
