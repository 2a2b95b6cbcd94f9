package opshttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestOpsConnectionCap: a client that opens three times maxConns
// connections and sends nothing on them leaves the endpoint holding at
// most maxConns, a request already being answered is not cut, and a
// health request made meanwhile is answered (the endpoint used to accept
// every connection and keep each until its header timeout).
func TestOpsConnectionCap(t *testing.T) {
	entered := make(chan struct{}, 1)
	e, release := startHeld(t, entered)

	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	readyz := make(chan error, 1)
	go func() { readyz <- get(client, "http://"+e.Addr+"/readyz") }()
	<-entered // its handler is running; the connection is serving

	for range 3 * maxConns {
		c, err := net.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	if err := get(client, "http://"+e.Addr+"/healthz"); err != nil {
		t.Fatalf("/healthz behind %d silent connections: %v", 3*maxConns, err)
	}
	// The health connection was accepted after every silent one, so the
	// endpoint has decided about all of them by now.
	if n := serverConns(t, e.Addr); n > maxConns {
		t.Errorf("the endpoint holds %d connections, want at most %d", n, maxConns)
	}
	release()
	if err := <-readyz; err != nil {
		t.Errorf("/readyz in progress while the silent connections arrived: %v", err)
	}
}

// TestOpsConnectionCapAllServing: when every one of the maxConns
// connections is in a request, a new connection is closed at once (and
// the requests finish).
func TestOpsConnectionCapAllServing(t *testing.T) {
	entered := make(chan struct{}, maxConns)
	e, release := startHeld(t, entered)

	tr := &http.Transport{MaxIdleConnsPerHost: maxConns}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	errs := make(chan error, maxConns)
	var wg sync.WaitGroup
	for range maxConns {
		wg.Go(func() { errs <- get(client, "http://"+e.Addr+"/readyz") })
	}
	for range maxConns {
		<-entered
	}

	c, err := net.Dial("tcp", e.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Logf("writing the request: %v (closed already)", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	var ne net.Error
	switch {
	case err == nil:
		resp.Body.Close()
		t.Errorf("connection beyond %d serving ones answered %s, want it closed", maxConns, resp.Status)
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("connection beyond %d serving ones left open: %v", maxConns, err)
	}

	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("/readyz held while the cap was reached: %v", err)
		}
	}
}

// TestOpsConnectionCapPerSource: a neighbour that opens three times
// maxConns silent connections from its own address makes room out of its
// own: a scraper's keep-alive connection, idle and older than all of them,
// still carries its next request.
func TestOpsConnectionCapPerSource(t *testing.T) {
	e, _ := startHeld(t, make(chan struct{}, 1))
	scraper, err := net.Dial("tcp", e.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer scraper.Close()
	scraper.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(scraper)
	scrape := func() error {
		if _, err := io.WriteString(scraper, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := scrape(); err != nil {
		t.Fatal(err)
	}

	neighbour := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	for range 3 * maxConns {
		c, err := neighbour.Dial("tcp", e.Addr)
		if err != nil {
			t.Skip("dialling from 127.0.0.2:", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	if err := get(&http.Client{Transport: tr, Timeout: time.Minute}, "http://"+e.Addr+"/healthz"); err != nil {
		t.Fatalf("/healthz behind %d silent connections: %v", 3*maxConns, err)
	}
	if n := serverConns(t, e.Addr); n > maxConns {
		t.Errorf("the endpoint holds %d connections, want at most %d", n, maxConns)
	}
	if err := scrape(); err != nil {
		t.Errorf("the scraper's idle connection, after another address's flood: %v", err)
	}
}

// startHeld starts an endpoint whose /readyz signals entered and then
// waits for release; both happen when the test ends.
func startHeld(t *testing.T, entered chan<- struct{}) (*Endpoint, func()) {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("counts the endpoint's connections in /proc/net/tcp:", err)
	}
	held := make(chan struct{})
	e, err := Start("127.0.0.1:0", prometheus.NewRegistry(), func() (bool, string) {
		entered <- struct{}{}
		<-held
		return true, "ready"
	}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before Stop, which waits for requests in progress
	return e, release
}

// get GETs url and reads the answer: nil when it is 200.
func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// serverConns counts the established connections on addr's side (local
// port addr's) that a process still holds open, from /proc/net/tcp
// (a socket nobody holds, closed but not yet gone, has inode 0).
func serverConns(t *testing.T, addr string) int {
	t.Helper()
	return len(sendQueues(t, addr))
}

// sendQueues is, for each connection serverConns counts (by its peer's
// address), the bytes in its send queue.
func sendQueues(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf(":%04X", p)
	queues := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		const established = "01"
		if len(f) > 9 && strings.HasSuffix(f[1], suffix) && f[3] == established && f[9] != "0" {
			tx, _, _ := strings.Cut(f[4], ":")
			queues[f[2]], _ = strconv.ParseInt(tx, 16, 64)
		}
	}
	return queues
}
