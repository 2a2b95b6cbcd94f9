package conncap

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// guard bounds each wait of these tests; none is expected to come near it.
const guard = time.Minute

// startStreams serves, on loopback and capped at max connections, /stream
// (an answer without end, written as fast as the client takes it; each
// start is sent on entered) and /ok (a short answer).
func startStreams(t *testing.T, max int, entered chan<- struct{}) string {
	t.Helper()
	chunk := []byte(strings.Repeat("x", 32<<10))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(rw http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		for {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /ok", func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "ok\n") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(Cap(hs, ln, max))
	}()
	t.Cleanup(func() {
		hs.Close()
		<-served
	})
	return ln.Addr().String()
}

// request opens a connection to addr and sends a GET of path on it.
func request(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// probeUntilAnswered GETs /ok on new connections until one is answered:
// those arriving while every place is serving are closed at once.
func probeUntilAnswered(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for tries := 1; ; tries++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(guard))
		_, err = io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		}
		c.Close()
		var ne net.Error
		switch {
		case err == nil:
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/ok: %s", resp.Status)
			}
			return
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("a probe neither answered nor closed within %v", guard)
		case time.Now().After(deadline):
			t.Fatalf("every probe for %v (%d) closed at once: the connections held (whose clients read nothing of their answers, or send nothing of their bodies) keep every place", guard, tries)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStalledAnswerMakesRoom: when every place is held by a connection
// whose client reads nothing of its answer, a new connection (a probe)
// takes the place of one of them. It used to be closed at once, for as
// long as the writes lasted (the server's WriteTimeout, 30 s for the
// operator endpoint; without end here).
func TestStalledAnswerMakesRoom(t *testing.T) {
	entered := make(chan struct{}, 2)
	addr := startStreams(t, 2, entered)
	for range 2 {
		request(t, addr, "/stream") // and read nothing
		<-entered
	}
	probeUntilAnswered(t, addr)
}

// TestReadAnswerKept: a connection whose client reads its answer, slowly,
// keeps its place while new connections arrive at the bound; the one whose
// client reads nothing gives its place instead.
func TestReadAnswerKept(t *testing.T) {
	entered := make(chan struct{}, 2)
	addr := startStreams(t, 2, entered)

	reader := request(t, addr, "/stream")
	<-entered
	fast := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(reader), nil)
		if err != nil {
			read <- err
			return
		}
		defer resp.Body.Close()
		b := make([]byte, 4<<10)
		for {
			select {
			case <-fast:
				// Past every buffer on the way: the connection is still open.
				_, err := io.CopyN(io.Discard, resp.Body, 32<<20)
				read <- err
				return
			default:
			}
			if _, err := io.ReadFull(resp.Body, b); err != nil {
				read <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()

	request(t, addr, "/stream") // and read nothing
	<-entered
	probeUntilAnswered(t, addr)
	close(fast)
	if err := <-read; err != nil {
		t.Errorf("the answer read slowly while probes arrived at the bound: %v", err)
	}
}

// TestTLSAnswerReadSlowly: a TLS connection under the cap (a listener of
// TLS connections given to Cap) is written without rounds: a TLS write
// that reaches a deadline leaves the connection's state corrupt, and
// every write after it fails, so a round ending in the middle of a slowly
// read answer would cut it (and the next rounds would spin on the error).
// Its client reads 64 KiB over more than a round here and gets all of it.
func TestTLSAnswerReadSlowly(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	ts.Close() // only its certificate is used
	clientCfg := ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	clientCfg.ServerName = "example.com"
	a, b := net.Pipe()
	defer a.Close() // not the TLS connections: their close_notify would wait on the pipe
	defer b.Close()
	srv, cli := tls.Server(a, ts.TLS), tls.Client(b, clientCfg)
	c := &capConn{Conn: srv, rounds: resumable(srv)}

	answer := []byte(strings.Repeat("0123456789abcdef", 4<<10))
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(answer)
		wrote <- err
	}()
	got := make([]byte, 0, len(answer))
	buf := make([]byte, 1<<10)
	start := time.Now()
	cli.SetDeadline(start.Add(guard))
	for len(got) < len(answer) {
		n, err := cli.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), len(answer), err)
		}
		if time.Since(start) < stall+stall/2 {
			time.Sleep(stall / 40) // 1 KiB each 50 ms: the answer takes longer than a round
		}
	}
	if string(got) != string(answer) {
		t.Fatal("the answer read is not the one written")
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("write: %v", err)
		}
	case <-time.After(guard):
		t.Fatal("the write did not return")
	}
}
