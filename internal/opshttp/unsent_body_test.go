package opshttp

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestUnsentBodyHoldsNoPlace: a request announcing a body (Content-Length)
// that never came was answered only once net/http had read the body, up
// to 256 KB, or its read timed out (10 s): meanwhile its connection was
// serving a request, which the 64 places never give up, so a neighbour
// sending 64 such GETs every 10 s had every other address's probe
// closed at once (a liveness probe failing: the process restarted). The
// endpoints read no body: such a request is answered at once and its
// connection closed after.
func TestUnsentBodyHoldsNoPlace(t *testing.T) {
	defer func(d time.Duration) { readTimeout = d }(readTimeout)
	readTimeout = 10 * time.Minute // longer than the test waits for an answer
	e, err := Start("127.0.0.1:0", prometheus.NewRegistry(), func() (bool, string) { return true, "ready" },
		slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	conns := make([]net.Conn, maxConns)
	for i := range conns {
		c, err := net.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d, its announced body not sent: %v (its answer waits for the body)", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !resp.Close {
			t.Errorf("request %d, its announced body not sent: %s, closing %v; want 200, the connection closed after", i, resp.Status, resp.Close)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("request %d, its announced body not sent: the connection after the answer: %v, want it closed", i, err)
		}
	}
	neighbour := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	tr := &http.Transport{DialContext: neighbour.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	if err := get(&http.Client{Transport: tr, Timeout: time.Minute}, "http://"+e.Addr+"/healthz"); err != nil {
		t.Errorf("/healthz from another address: %v", err)
	}
}
