package opshttp

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAddressInUse: an --http address another process holds (a second
// worker started with the first one's flags) is said with the flag and
// what to do, not only as the bind error.
func TestAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	_, err = Start(addr, prometheus.NewRegistry(), func() (bool, string) { return true, "ready" },
		slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err == nil {
		t.Fatalf("an endpoint started on %s, which is held", addr)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("error %q does not wrap EADDRINUSE", err)
	}
	for _, want := range []string{"--http " + addr, "another worker or gateway", "port 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
