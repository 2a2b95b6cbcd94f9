package opshttp

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestIdleConnectionsClosed: keep-alive connections left idle after a
// request are closed (only ReadHeaderTimeout was set: any client reaching
// --http held as many sockets, goroutines and buffers as it opened).
func TestIdleConnectionsClosed(t *testing.T) {
	e, err := Start("127.0.0.1:0", prometheus.NewRegistry(), func() (bool, string) { return true, "ready" },
		slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	const n = 200
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conns = append(conns, c)
	}
	time.Sleep(15 * time.Second) // past the idle timeout (10 s)
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var b [1]byte
		_, err := c.Read(b[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++ // still open: the server has not closed it
		}
	}
	if open > 0 {
		t.Fatalf("%d of %d idle connections still open 15 s after their one request: the endpoint never closes idle connections", open, n)
	}
}
