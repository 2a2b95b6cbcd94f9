package serverconf

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
)

// Listen is the client address file configures, "host:port" as
// nats-server reads its listen, host (or net) and port keys, with its
// default host 0.0.0.0 when it gives only a port; "" when it gives no
// port or its random one (-1), which no client can know beforehand. It
// is embedded.FileDefaults's listen, without nats-server's server
// package: toolctl dials a worker's server with it.
func Listen(file string) (string, error) {
	if err := Check(file); err != nil {
		return "", fmt.Errorf("server configuration: %w", err)
	}
	m, err := conf.ParseFile(file)
	if err != nil {
		return "", fmt.Errorf("server configuration: %w", err)
	}
	host, port := "", 0
	for k, v := range m { // the top level's keys, any case, as nats-server's
		switch strings.ToLower(k) {
		case "listen":
			switch v := v.(type) {
			case int64:
				port = int(v)
			case string:
				h, p, err := net.SplitHostPort(v)
				if err != nil {
					return "", fmt.Errorf("server configuration %s: listen: could not parse address string %q", file, v)
				}
				if port, err = strconv.Atoi(p); err != nil {
					return "", fmt.Errorf("server configuration %s: listen: could not parse port %q", file, p)
				}
				host = h
			default:
				return "", fmt.Errorf("server configuration %s: listen: expected port or host:port, got %T", file, v)
			}
		case "port":
			p, ok := v.(int64)
			if !ok {
				return "", fmt.Errorf("server configuration %s: port: expected a number, got %T", file, v)
			}
			port = int(p)
		case "host", "net":
			h, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("server configuration %s: %s: expected a string, got %T", file, k, v)
			}
			host = h
		}
	}
	if port <= 0 {
		return "", nil
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}
