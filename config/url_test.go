package config

import "testing"

// TestCheckURLAccepts: the NATS URLs nats.go dials, an IPv6 literal
// without a port (it takes the default port) among them.
func TestCheckURLAccepts(t *testing.T) {
	for _, raw := range []string{
		"nats://a:4222", "a:4222", "a", "nats://a",
		"nats://[::1]:4222", "nats://[::1]", "[::1]", "[fe80::1%25eth0]:4222", "ws://[2001:db8::1]",
	} {
		if err := checkURL(raw, "nats", "tls", "ws", "wss"); err != nil {
			t.Errorf("%q refused: %v", raw, err)
		}
	}
}

// TestCheckURLRefusesBadIPv6: a bracketed host that is no IPv6 address.
func TestCheckURLRefusesBadIPv6(t *testing.T) {
	for _, raw := range []string{"nats://[zz]", "[1.2.3]", "nats://[::1]:"} {
		if err := checkURL(raw, "nats"); err == nil {
			t.Errorf("%q accepted", raw)
		}
	}
}
