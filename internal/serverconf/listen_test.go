package serverconf_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/serverconf"
)

// TestListenAsTheServerReadsIt: Listen reads a configuration's address as
// nats-server does (embedded.FileDefaults, which asks nats-server), for
// each way of writing it; the random port is no address a client can
// dial.
func TestListenAsTheServerReadsIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "net.conf"), []byte("port: 4555\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, conf, want string }{
		{"listen host and port", "listen: \"127.0.0.1:4333\"\n", "127.0.0.1:4333"},
		{"listen port only", "listen: 4334\n", "0.0.0.0:4334"},
		{"listen with a colon", "listen: \":4335\"\n", "0.0.0.0:4335"},
		{"port and host", "host: 127.0.0.2\nport: 4336\n", "127.0.0.2:4336"},
		{"net and port in another case", "NET = 127.0.0.3\nPort = 4337\n", "127.0.0.3:4337"},
		{"port in an include", "include net.conf\nhost: ::1\n", "[::1]:4555"},
		{"beside other blocks", "jetstream { store_dir: /tmp/x }\nlisten: 127.0.0.1:4338\nauthorization { token: abcdefghijklmnop }\n", "127.0.0.1:4338"},
		{"no address", "jetstream: enabled\n", ""},
		{"the random port", "port: -1\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "server.conf")
			if err := os.WriteFile(file, []byte(tc.conf), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := serverconf.Listen(file)
			if err != nil || got != tc.want {
				t.Fatalf("Listen = %q, %v; want %q", got, err, tc.want)
			}
			server, _, err := embedded.FileDefaults(file)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && server != tc.want {
				t.Fatalf("nats-server reads %q, Listen %q", server, got)
			}
		})
	}
}

// TestListenRefusesWhatCheckRefuses: Listen checks the files first, so a
// named pipe among the includes is an error, not a hang.
func TestListenRefusesWhatCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
		t.Skip("no named pipes:", err)
	}
	file := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(file, []byte("port: 4222\ninclude fifo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := serverconf.Listen(file); err == nil {
		t.Fatal("a named pipe included: no error")
	}
}
