//go:build linux

package opshttp

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProbeBesideUnreadAnswers: a neighbour that opens maxConns
// connections and on each pipelines GETs of /metrics while reading
// nothing holds every place with a request in progress, its answers stuck
// in their writes. A probe made meanwhile is answered once those writes
// have stalled. It used to be turned away until the write timeout ended
// them (30 s, long enough for an orchestrator to kill a healthy worker).
func TestProbeBesideUnreadAnswers(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("reads the endpoint's send queues in /proc/net/tcp:", err)
	}
	// The scene (every place held by a stalled write) takes long to set
	// on a loaded machine, and must be set before the write timeout frees
	// the places: a longer timeout here, so that the probe getting in
	// soon after the scene is set shows it did not wait for it.
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 5 * time.Minute
	reg := prometheus.NewRegistry()
	big := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolbus_test_big", Help: "Makes /metrics long."}, []string{"series"})
	for i := range 4000 {
		big.WithLabelValues(fmt.Sprintf("series-%06d", i)).Set(1)
	}
	reg.MustRegister(big) // an answer of about 200 KB
	e, err := Start("127.0.0.1:0", reg, func() (bool, string) { return true, "ready" }, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)

	// The neighbour's receive buffers as small as the kernel allows, and
	// its segments small (the endpoint sizes its send buffers by them), so
	// that a few answers fill the way.
	small := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536)
		})
		return nil
	}}
	pipelined := strings.Repeat("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 1000)
	start := time.Now()
	for range maxConns {
		c, err := small.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() }) // before Stop, whose wait it ends
		go io.WriteString(c, pipelined) // until it is closed
	}

	// Settled: every one of them has been seen with answers waiting to be
	// sent, the same bytes a second later (its handler's write took no
	// more; each has more answers to write than the way holds).
	var settled time.Time
	stuck := map[string]bool{}
	for last := map[string]int64{}; ; {
		time.Sleep(time.Second)
		q := sendQueues(t, e.Addr)
		for peer, n := range q {
			if n > 0 && n == last[peer] {
				stuck[peer] = true
			}
		}
		if len(q) == maxConns && len(stuck) == maxConns {
			settled = time.Now()
			break
		}
		if time.Since(start) > writeTimeout {
			t.Fatalf("the neighbour's %d connections never settled in stuck writes (%d seen stuck; send queues %v)", maxConns, len(stuck), q)
		}
		last = q
	}

	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	for tries := 1; ; tries++ {
		err := get(client, "http://"+e.Addr+"/healthz")
		if err == nil {
			break
		}
		// The guard: the neighbour's places come free at writeTimeout
		// anyway (some time after they settled); the probe must not have
		// had to wait for that.
		if time.Since(settled) > time.Minute {
			t.Fatalf("/healthz beside %d connections reading nothing of their answers: %d tries for %v refused (last: %v)",
				maxConns, tries, time.Since(settled).Round(time.Second), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
