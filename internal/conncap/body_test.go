package conncap

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startBodies serves, on loopback and capped at max connections, POST
// /body (its body read whole, answered with its length, or 408 when the
// read fails; each start is sent on entered), POST /refused (answered
// 415 without its body being read; each start sent on entered) and GET
// /ok (a short answer).
func startBodies(t *testing.T, max int, entered chan<- struct{}) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /body", func(rw http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, "body not received", http.StatusRequestTimeout)
			return
		}
		fmt.Fprintf(rw, "%d\n", len(b))
	})
	mux.HandleFunc("POST /refused", func(rw http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		http.Error(rw, "not this", http.StatusUnsupportedMediaType)
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

// post opens a connection to addr and sends the head of a POST of path
// announcing a body of n bytes (chunked when n < 0), and none of it.
func post(t *testing.T, addr, path string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(guard))
	length := fmt.Sprintf("Content-Length: %d", n)
	if n < 0 {
		length = "Transfer-Encoding: chunked"
	}
	if _, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: x\r\n"+length+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer is what answers read on one of its connections.
type answer struct {
	i      int
	status int
	body   string
	rest   *bufio.Reader // what follows it
	err    error
}

// answers reads the answer on each of conns in the background and sends
// it on the channel.
func answers(conns ...net.Conn) <-chan answer {
	ch := make(chan answer, len(conns))
	for i, c := range conns {
		go func() {
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				ch <- answer{i: i, err: err}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ch <- answer{i: i, status: resp.StatusCode, body: string(body), rest: br}
		}()
	}
	return ch
}

// TestStalledBodyMakesRoom: when every place is held by a request whose
// body does not come (announced by its length or chunked, none of it
// sent, or one answered without its body read, which the server then
// reads to keep the connection), a new connection takes the place of one
// of them, and that request is answered (its body read fails) and its
// connection closed. It used to be closed at once, for as long as the
// server waited for the bodies (its read timeout; without end here).
func TestStalledBodyMakesRoom(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"read", "/body", http.StatusRequestTimeout},
		{"unread", "/refused", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered := make(chan struct{}, 2)
			addr := startBodies(t, 2, entered)
			a := post(t, addr, tc.path, 1000)
			<-entered
			b := post(t, addr, tc.path, -1)
			<-entered
			got := answers(a, b)
			probeUntilAnswered(t, addr)
			select {
			case ans := <-got:
				if ans.err != nil || ans.status != tc.status {
					t.Fatalf("the request whose place was taken (%d): status %d, %v; want %d", ans.i, ans.status, ans.err, tc.status)
				}
				if _, err := ans.rest.ReadByte(); err != io.EOF {
					t.Errorf("the request whose place was taken (%d), after its answer: %v; want the connection closed", ans.i, err)
				}
			case <-time.After(guard):
				t.Fatal("neither request whose body does not come was answered, though a probe was")
			}
		})
	}
}

// TestProgressingBodyKept: a request whose body comes slowly (a byte
// every 200 ms) keeps its place while new connections arrive at the
// bound, and is served whole; the one whose body does not come gives its
// place instead.
func TestProgressingBodyKept(t *testing.T) {
	const size = 10000
	entered := make(chan struct{}, 2)
	addr := startBodies(t, 2, entered)
	post(t, addr, "/body", 1000)
	<-entered
	slow := post(t, addr, "/body", size)
	<-entered
	got := answers(slow)
	sent := make(chan int, 1)
	stop := make(chan struct{})
	go func() {
		n := 0
		defer func() { sent <- n }()
		for {
			select {
			case <-stop:
				m, _ := io.WriteString(slow, strings.Repeat("y", size-n))
				n += m
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := io.WriteString(slow, "y"); err != nil {
				return
			}
			n++
		}
	}()
	probeUntilAnswered(t, addr)
	close(stop)
	if n := <-sent; n != size {
		t.Fatalf("the slow body: %d of %d bytes sent", n, size)
	}
	select {
	case ans := <-got:
		if ans.err != nil || ans.status != http.StatusOK || ans.body != fmt.Sprintf("%d\n", size) {
			t.Errorf("the request whose body came slowly while probes arrived at the bound: status %d %q, %v; want 200 %d", ans.status, ans.body, ans.err, size)
		}
	case <-time.After(guard):
		t.Fatal("the request whose body came slowly was not answered")
	}
}
