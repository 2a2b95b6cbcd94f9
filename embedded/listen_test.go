package embedded

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func listenConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestNoAuthUserIsNoAuthentication: a configuration with users and a
// no_auth_user admits a client with no credentials at all (as that user):
// Start refuses to listen beyond loopback with it (it did, and the client
// could publish a tool call).
func TestNoAuthUserIsNoAuthentication(t *testing.T) {
	conf := listenConfig(t, `
authorization { users = [ {user: alice, password: s3cret} ] }
no_auth_user: alice
`)
	s, err := Start(&Options{Listen: "0.0.0.0:0", StoreDir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Logf("refused as it should: %v", err)
		return
	}
	defer s.Shutdown()
	nc, cerr := nats.Connect(s.ClientURL()) // no user, no password
	if cerr == nil {
		defer nc.Close()
		if perr := nc.Publish("tools.call.shell", []byte("{}")); perr == nil && nc.Flush() == nil {
			t.Errorf("anonymous client connected to %s and published tools.call.shell", s.ClientURL())
		}
	}
	t.Fatalf("Start listened on 0.0.0.0 although anyone can connect without credentials (no_auth_user); anonymous connect err=%v", cerr)
}

// TestOpenWebsocketListenerRefused: the refusal covers the other
// listeners a configuration may open (it looked at the client listener
// only): a websocket listener on every interface without authentication,
// even for an in-process-only server, let anyone use the bus.
func TestOpenWebsocketListenerRefused(t *testing.T) {
	port := freePort(t)
	conf := listenConfig(t, `
websocket { host: "0.0.0.0", port: `+strconv.Itoa(port)+`, no_tls: true }
`)
	s, err := Start(&Options{StoreDir: t.TempDir(), ConfigFile: conf}) // Listen "": "no socket at all"
	if err != nil {
		t.Logf("refused as it should: %v", err)
		return
	}
	defer s.Shutdown()
	host := "127.0.0.1"
	if addrs, _ := net.InterfaceAddrs(); addrs != nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				host = ipn.IP.String()
				break
			}
		}
	}
	url := "ws://" + net.JoinHostPort(host, strconv.Itoa(port))
	nc, cerr := nats.Connect(url, nats.Timeout(2*time.Second))
	if cerr == nil {
		defer nc.Close()
	}
	t.Fatalf("Start (in-process only, no auth, not insecure) opened an unauthenticated websocket listener on 0.0.0.0:%d; anonymous connect to %s: err=%v", port, url, cerr)
}

// TestStartFailureReason: a port already in use is reported at once, with
// the reason (it came after the whole ReadyTimeout as "not ready for
// connections").
func TestStartFailureReason(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	s, err := Start(&Options{Listen: ln.Addr().String(), StoreDir: t.TempDir(), ReadyTimeout: 10 * time.Second})
	if err == nil {
		s.Shutdown()
		t.Fatal("Start succeeded on a port in use")
	}
	took := time.Since(start)
	if !strings.Contains(err.Error(), "in use") || took > 5*time.Second {
		t.Fatalf("after %v: %v (the reason, address already in use, is lost and the caller waits the whole ReadyTimeout)", took.Round(time.Millisecond), err)
	}
}

// TestCheck: Check says what Start would refuse, as an *ExposedError
// naming the listener, and whether the server would admit only clients
// with credentials, without starting anything.
func TestCheck(t *testing.T) {
	users := listenConfig(t, `authorization { users = [ {user: alice, password: s3cret} ] }`)
	ws := listenConfig(t, `websocket { host: "0.0.0.0", port: 8443, no_tls: true }`)
	// Leaf nodes without an authorization of their own are held to the
	// server's users, as clients are.
	leafUsers := listenConfig(t, `authorization { users = [ {user: alice, password: s3cret} ] }
leafnodes { host: "0.0.0.0", port: 7422 }`)
	leafOpen := listenConfig(t, `leafnodes { host: "0.0.0.0", port: 7422 }`)
	leafNoAuthUser := listenConfig(t, `authorization { users = [ {user: alice, password: s3cret} ] }
no_auth_user: alice
leafnodes { host: "0.0.0.0", port: 7422 }`)
	tests := []struct {
		name     string
		opts     Options
		auth     bool
		listener string // of the *ExposedError; "" for none
	}{
		{"loopback", Options{Listen: "127.0.0.1:0"}, false, ""},
		{"every interface", Options{Listen: "0.0.0.0:4222"}, false, "client"},
		{"every interface, insecure", Options{Listen: "0.0.0.0:4222", Insecure: true}, false, ""},
		{"every interface, users", Options{Listen: "0.0.0.0:4222", ConfigFile: users}, true, ""},
		{"in-process, users", Options{ConfigFile: users}, true, ""},
		{"websocket", Options{ConfigFile: ws}, false, "websocket"},
		{"leaf node, server users", Options{ConfigFile: leafUsers}, true, ""},
		{"leaf node, no users", Options{ConfigFile: leafOpen}, false, "leaf node"},
		{"leaf node, no_auth_user", Options{ConfigFile: leafNoAuthUser}, false, "leaf node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth, err := Check(&tt.opts)
			var exposed *ExposedError
			switch {
			case tt.listener == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.listener != "" && !errors.As(err, &exposed):
				t.Fatalf("Check: %v, want an *ExposedError", err)
			case tt.listener != "" && exposed.Listener != tt.listener:
				t.Fatalf("Check: refused the %s listener (%v), want the %s one", exposed.Listener, err, tt.listener)
			case auth != tt.auth:
				t.Fatalf("Check: authenticates %v, want %v", auth, tt.auth)
			}
		})
	}
}
