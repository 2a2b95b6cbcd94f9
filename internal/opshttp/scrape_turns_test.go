package opshttp

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestScrapeWaitsItsTurn: /metrics gathered at most 4 scrapes at once and
// answered any other 503 "Limit of concurrent requests reached" at once,
// so a neighbour (a dashboard, a script) polling /metrics in a loop made
// most of Prometheus's scrapes fail. A scrape that comes while others are
// gathered now waits its turn, behind at most 4 of the neighbour's.
func TestScrapeWaitsItsTurn(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e, err := Start("127.0.0.1:0", reg, func() (bool, string) { return true, "ready" }, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	get := func(c *http.Client) (int, error) {
		resp, err := c.Get("http://" + e.Addr + "/metrics")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	neighbour := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	if c, err := neighbour.Dial("tcp", e.Addr); err != nil {
		t.Skip("dialling from 127.0.0.2:", err)
	} else {
		c.Close()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range 16 { // the neighbour: well within the 64 connections
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{DialContext: neighbour.DialContext}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			for {
				select {
				case <-stop:
					return
				default:
				}
				get(c)
			}
		}()
	}
	c := &http.Client{}
	for i := range 20 {
		code, err := get(c)
		if err != nil || code != http.StatusOK {
			t.Fatalf("scrape %d while a neighbour polls /metrics: %d %v, want 200", i, code, err)
		}
	}
}
