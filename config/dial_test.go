package config

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

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
