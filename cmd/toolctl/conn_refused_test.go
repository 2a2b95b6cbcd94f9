package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnRefusedSaysWhatToDo: with no server at the URL given (by
// --nats, NATS_URL or a --config file's embedded.listen) toolctl said
// only nats.go's "no servers available for connection", where the
// default URL got a hint to start a worker. It now says that nothing
// listens there, where the URL came from, and what to do.
func TestConnRefusedSaysWhatToDo(t *testing.T) {
	closedURL := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "nats://" + l.Addr().String()
	}
	one, two := closedURL(), closedURL()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NATS_") {
			t.Setenv(name, "")
		}
	}
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("embedded:\n  listen: "+strings.TrimPrefix(one, "nats://")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const todo = ": start the worker or NATS server first, or give the address it listens on, the nats= of a worker's ready line, with --nats or NATS_URL)"
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"flag", "", []string{"--nats", one, "tools"}, "no NATS server listens there; the URL came from flag --nats" + todo},
		{"variable", one, []string{"tools"}, "no NATS server listens there; the URL came from env NATS_URL" + todo},
		{"config file", "", []string{"--config", cfg, "tools"}, "no NATS server listens there; the URL came from --config " + cfg + " (its embedded.listen)" + todo},
		{"several", "", []string{"--nats", one + "," + two, "tools"}, "no NATS server listens at any of them; the URLs came from flag --nats" + todo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NATS_URL", tt.env)
			var out, errb strings.Builder
			code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
			if code != exitNoNATS || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("exit %d, want %d and stderr with %q:\n%s", code, exitNoNATS, tt.want, errb.String())
			}
		})
	}
}
