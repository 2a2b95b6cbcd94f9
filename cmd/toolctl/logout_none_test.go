package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/mcp"
)

// `toolctl mcp logout` of a server with no stored grant says there was
// none; it said the stored grant was deleted. With one stored, it
// deletes it and says so.
func TestLogoutWithoutGrant(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("mcp_servers:\n  - name: tracker\n    url: http://127.0.0.1:1/mcp\n    oauth: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logout := func() (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, []string{"--nats", s.ClientURL(), "--config", cfg, "mcp", "logout", "tracker"}, nil, &so, &se)
		return so.String(), se.String(), code
	}
	if out, se, code := logout(); code != exitOK || !strings.Contains(out, "no grant") || strings.Contains(out, "deleted") {
		t.Fatalf("logout without a grant: exit %d, want 0 saying there was none\n%s%s", code, out, se)
	}
	grants, err := mcp.OpenGrants(ctx, natstest.JS(t, natstest.Connect(t, s)), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := grants.Save(ctx, "tracker", &mcp.Grant{URL: "http://127.0.0.1:1/mcp", ClientID: "c", TokenURL: "http://127.0.0.1:1/token", AccessToken: "t"}, 0); err != nil {
		t.Fatal(err)
	}
	if out, se, code := logout(); code != exitOK || !strings.Contains(out, "deleted") {
		t.Fatalf("logout with a grant: exit %d\n%s%s", code, out, se)
	}
	if g, _, err := grants.Load(ctx, "tracker"); err != nil || g != nil {
		t.Fatalf("after logout: grant %+v, %v", g, err)
	}
}
