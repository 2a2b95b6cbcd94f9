package config

import (
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close()
	return url
}

// TestDialEachServer: with several server URLs, nats.Connect's error is
// that of the server its shuffled list tried last, and a refused
// connection there hides the others' ("no servers available for
// connection"): a server whose certificate is not verified and a closed
// port came out as either, at random, naming neither. Dial names each
// server's failure, in the list's order.
func TestDialEachServer(t *testing.T) {
	_, tlsURL := natstest.TLSServer(t)
	closed := closedURL(t)
	for _, list := range [][]string{{tlsURL, closed}, {closed, tlsURL}} {
		nc, err := Dial(strings.Join(list, ","), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Fatal("connected")
		}
		var each ServersError
		if !errors.As(err, &each) || len(each) != 2 {
			t.Fatalf("want the error of each server, got %v", err)
		}
		for i, s := range each {
			if s.URL != list[i] {
				t.Fatalf("server %d is %s, want %s: %v", i, s.URL, list[i], err)
			}
			want := list[i] + ": connection refused"
			if s.URL == tlsURL {
				want = list[i] + ": nats: tls error: tls: failed to verify certificate: x509: certificate signed by unknown authority"
				if !errors.Is(s, nats.ErrTLS) || !errors.As(s, new(*tls.CertificateVerificationError)) {
					t.Fatalf("%s: want a TLS verification error, got %v", s.URL, s.Err)
				}
			} else if !errors.Is(s, nats.ErrNoServers) {
				t.Fatalf("%s: want nats.ErrNoServers under it, got %v", s.URL, s.Err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("want the error to say %q:\n%v", want, err)
			}
		}
	}
}

// TestDialEachServerTLSOfList: a tls:// URL makes nats.go ask every
// server of the list for TLS, so a server without TLS fails in the list
// though it would take a connection dialled alone without TLS: each
// server dialled alone is asked for TLS too, and says what it said in
// the list.
func TestDialEachServerTLSOfList(t *testing.T) {
	plain := natstest.Embedded(t, true).ClientURL()
	closed := "tls://" + strings.TrimPrefix(closedURL(t), "nats://")
	nc, err := Dial(plain+","+closed, nats.Timeout(5*time.Second))
	if err == nil {
		nc.Close()
		t.Fatal("connected")
	}
	var each ServersError
	if !errors.As(err, &each) || len(each) != 2 || each[0].URL != plain || !errors.Is(each[0], nats.ErrSecureConnWanted) {
		t.Fatalf("want %s refused for TLS, got %v", plain, err)
	}
	if !strings.Contains(err.Error(), closed+": connection refused") {
		t.Fatalf("want %s refused:\n%v", closed, err)
	}
}

// TestDialOneServer: a single URL's error is nats.Connect's, as it was.
func TestDialOneServer(t *testing.T) {
	_, err := Dial(closedURL(t), nats.Timeout(5*time.Second))
	var each ServersError
	if !errors.Is(err, nats.ErrNoServers) || errors.As(err, &each) {
		t.Fatalf("want nats.ErrNoServers alone, got %v", err)
	}
}

// TestDialOptionErrorOnce: an option that fails (a CA file missing, a
// negative timeout, an nkey without its signer) came back once for each
// server of the list, as Dial dialled each alone after the list failed.
// It is said once.
func TestDialOptionErrorOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-ca.pem")
	for _, tc := range []struct {
		opt  nats.Option
		says string
	}{
		{nats.RootCAs(missing), missing},
		{nats.Timeout(-time.Second), nats.ErrBadTimeout.Error()},
		{nats.Nkey("UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil), nats.ErrNkeyButNoSigCB.Error()},
	} {
		_, err := Dial(closedURL(t)+","+closedURL(t), tc.opt)
		if err == nil {
			t.Fatal("connected")
		}
		if errors.As(err, new(ServersError)) || strings.Count(err.Error(), tc.says) != 1 {
			t.Errorf("want %q once, not per server: %v", tc.says, err)
		}
	}
}

// TestDialListOnce: a list that connects is dialled once: no server is
// dialled alone before it (a probe would double every connection's
// handshake, TLS and authentication, an auth callout's too, on every
// start of a worker or toolctl), and a list that fails names each
// server's failure.
func TestDialListOnce(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1
	})
	closed := closedURL(t)
	for _, list := range [][]string{{s.ClientURL(), closed}, {closed, s.ClientURL()}} {
		before := varzConnections(t, s)
		nc, err := Dial(strings.Join(list, ","), nats.Timeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
		if n := varzConnections(t, s) - before; n != 1 {
			t.Fatalf("the server was dialled %d times for one connection, want once", n)
		}
	}
	a := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1
		o.Username, o.Password = "someone", "secret"
	})
	_, err := Dial(a.ClientURL()+","+closed, nats.Timeout(10*time.Second))
	var each ServersError
	if !errors.As(err, &each) || len(each) != 2 || !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("want each server's failure, the authorization violation among them: %v", err)
	}
}

// varzConnections is the number of client connections s has taken.
func varzConnections(t *testing.T, s *server.Server) uint64 {
	t.Helper()
	v, err := s.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v.TotalConnections
}

// TestDialListKept: the connection Dial makes to a list keeps every
// server of it to reconnect to, though it connected to one that answered.
func TestDialListKept(t *testing.T) {
	live := natstest.Embedded(t, true).ClientURL()
	closed := closedURL(t)
	for _, list := range [][]string{{closed, live}, {live, closed}} {
		nc, err := Dial(strings.Join(list, ","), nats.Timeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		servers := nc.Servers()
		url := nc.ConnectedUrl()
		nc.Close()
		if url != live {
			t.Fatalf("connected to %q, want %s", url, live)
		}
		for _, u := range list {
			if !slices.Contains(servers, u) {
				t.Fatalf("the connection's servers %v lack %s", servers, u)
			}
		}
	}
}
