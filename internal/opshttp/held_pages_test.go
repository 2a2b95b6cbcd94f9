package opshttp

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// bigCollector makes a metrics page of about n × len(v) bytes: a
// worker's 20,000 tool labels make one of some 36 MB.
type bigCollector struct {
	desc *prometheus.Desc
	n    int
	v    string
}

func (c bigCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c bigCollector) Collect(ch chan<- prometheus.Metric) {
	for i := range c.n {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, strconv.Itoa(i)+c.v)
	}
}

// TestUnreadScrapesHoldBoundedPages: each scrape of /metrics held its
// whole page (gathered in memory) until its client had read it, up to
// the 30 s write timeout, so a neighbour sending scrapes it did not read
// made the process hold a page for each of them: 16 of a 16 MiB page
// held 512 MiB. The pages held are bounded in all (maxHeld) and
// by source (maxHeldBySource), a scrape past the bound answered 503, and
// a page is given back as its client takes it.
func TestUnreadScrapesHoldBoundedPages(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 5 * time.Minute // the unread answers outlast the test
	const page = 16 << 20
	reg := prometheus.NewRegistry()
	reg.MustRegister(bigCollector{prometheus.NewDesc("big", "A big page.", []string{"l"}, nil), page / (8 << 10), strings.Repeat("x", 8<<10)})
	e, err := Start("127.0.0.1:0", reg, func() (bool, string) { return true, "ready" }, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	neighbour := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	if c, err := neighbour.Dial("tcp", e.Addr); err != nil {
		t.Skip("dialling from 127.0.0.2:", err)
	} else {
		c.Close()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	codes := map[int]int{}
	for range 16 {
		c, err := neighbour.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a scrape not read: %v", err)
		}
		codes[resp.StatusCode]++ // its page not read
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 100<<20 {
		t.Errorf("16 scrapes of a %d MiB page, not read (answered %v): %d MiB held, want at most about 64 MiB", page>>20, codes, held>>20)
	}
	// Another address's scrape, as Prometheus's: compressed, and read.
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + e.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n == 0 {
		t.Errorf("a scrape from another address beside them: %s, %d bytes", resp.Status, n)
	}
}

// TestPartlyReadPagesGiveBackTheirMemory: a page's blocks were given
// back to the bound as its client took them, but kept in memory until
// the whole page was written, so scrapes read most of the way and then
// left unread held a whole page each while the bound counted what was
// left of them: the memory held passed the bound. A block taken by its
// client is let go as it is given back.
func TestPartlyReadPagesGiveBackTheirMemory(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 5 * time.Minute // the unread answers outlast the test
	const page, read, scrapes = 32 << 20, 24 << 20, 4
	reg := prometheus.NewRegistry()
	reg.MustRegister(bigCollector{prometheus.NewDesc("big", "A big page.", []string{"l"}, nil), page / (8 << 10), strings.Repeat("x", 8<<10)})
	e, err := Start("127.0.0.1:51690", reg, func() (bool, string) { return true, "ready" }, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range scrapes {
		c, err := net.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(256 << 10) // past a segment of the loopback's, or the stream stalls
		}
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.ContentLength < page {
			t.Fatalf("a scrape: %s, %d bytes; want 200 and a page of %d MiB", resp.Status, resp.ContentLength, page>>20)
		}
		if n, err := io.CopyN(io.Discard, resp.Body, read); err != nil { // the rest left unread
			t.Fatalf("scrape %d: read %d bytes: %v", i, n, err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > scrapes*(page-read)+16<<20 {
		t.Errorf("%d scrapes of a %d MiB page, %d MiB of each read: %d MiB held, want at most about %d MiB (what is left unread)",
			scrapes, page>>20, read>>20, held>>20, scrapes*(page-read)>>20)
	}
}
