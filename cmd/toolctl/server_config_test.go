package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigDialsServerConfigListen: --config with a worker's config
// whose embedded server listens where its server configuration says
// (embedded.server_config's listen, no embedded.listen) dials that
// address, as the worker listens there; toolctl dialled 127.0.0.1:4222.
func TestConfigDialsServerConfigListen(t *testing.T) {
	u, err := url.Parse(groupsFleet(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: %q\n", "0.0.0.0:"+u.Port())), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(cfg, []byte("embedded:\n  server_config: server.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := toolctl(t, "--config", cfg, "groups")
	if code != exitOK || !strings.Contains(out, "web") {
		t.Fatalf("toolctl --config %s groups: exit %d\n%s%s", cfg, code, out, errs)
	}
	// The config file's own embedded.listen still says more.
	if err := os.WriteFile(cfg, []byte("embedded:\n  server_config: server.conf\n  listen: 127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := toolctl(t, "--config", cfg, "groups"); code == exitOK || !strings.Contains(errs, "127.0.0.1:1") {
		t.Fatalf("embedded.listen beside server_config: exit %d\n%s", code, errs)
	}
}
