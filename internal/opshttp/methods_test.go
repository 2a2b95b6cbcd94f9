package opshttp

import (
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReadOnlyMethods: the endpoints answer GET and HEAD (probes,
// scrapes); a POST, DELETE or TRACE is 405, not a readiness answer.
func TestReadOnlyMethods(t *testing.T) {
	e, err := Start("127.0.0.1:0", prometheus.NewRegistry(), func() (bool, string) { return true, "ready" },
		slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, http.MethodTrace} {
			req, err := http.NewRequest(method, "http://"+e.Addr+path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := http.StatusOK
			if method != http.MethodGet && method != http.MethodHead {
				want = http.StatusMethodNotAllowed
			}
			if resp.StatusCode != want {
				t.Errorf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
			}
		}
	}
}
