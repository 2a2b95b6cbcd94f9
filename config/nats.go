package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/regularfile"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// URL joins the server URLs the way nats.Connect takes them ("" when
// there are none and the embedded server is used).
func (n NATS) URL() string { return strings.Join(n.URLs, ",") }

// HasCredentials reports whether n gives a way to authenticate: a
// credentials file, an nkey seed, a user, a token, a client certificate
// or a URL with a user in it.
func (n NATS) HasCredentials() bool {
	return n.Credentials != "" || n.NKeySeed != "" || n.User != "" || n.Token != "" || n.TLS.Cert != "" ||
		slices.ContainsFunc(n.URLs, func(u string) bool { return strings.Contains(u, "@") })
}

// Options returns the nats.go options for the configured authentication
// and TLS. It fails when the nkey seed file cannot be read or is not a
// user seed, the credentials file holds no nkey seed, the CA file no PEM
// certificate, or the client certificate and key do not load as a pair:
// nats.Connect reads them again, and a connection retried on a file that
// is not what it says would only fail again.
func (n NATS) Options() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case n.Credentials != "":
		data, err := regularfile.Read(n.Credentials, MaxFileBytes)
		if err == nil {
			var kp nkeys.KeyPair
			if kp, err = nkeys.ParseDecoratedNKey(data); err == nil {
				kp.Wipe()
			}
		}
		clear(data)
		if err != nil {
			return nil, fmt.Errorf("config: nats.credentials %s: %w", n.Credentials, err)
		}
		opts = append(opts, nats.UserCredentials(n.Credentials))
	case n.NKeySeed != "":
		o, err := nats.NkeyOptionFromSeed(n.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("config: nats.nkey_seed %s: %w", n.NKeySeed, err)
		}
		opts = append(opts, o)
	case n.User != "":
		opts = append(opts, nats.UserInfo(n.User, n.Password))
	case n.Token != "":
		opts = append(opts, nats.Token(n.Token))
	}
	if n.TLS.CA != "" {
		data, err := regularfile.Read(n.TLS.CA, MaxFileBytes)
		if err == nil && !x509.NewCertPool().AppendCertsFromPEM(data) {
			err = errors.New("no PEM certificate in it")
		}
		if err != nil {
			return nil, fmt.Errorf("config: nats.tls.ca %s: %w", n.TLS.CA, err)
		}
		opts = append(opts, nats.RootCAs(n.TLS.CA))
	}
	if n.TLS.Cert != "" {
		if _, err := tls.LoadX509KeyPair(n.TLS.Cert, n.TLS.Key); err != nil {
			return nil, fmt.Errorf("config: nats.tls.cert %s with nats.tls.key %s: %w", n.TLS.Cert, n.TLS.Key, err)
		}
		opts = append(opts, nats.ClientCert(n.TLS.Cert, n.TLS.Key))
	}
	if n.Identity != "" {
		// Every reply the connection waits for (its requests, JetStream's)
		// comes under the inbox the caller role may subscribe to.
		opts = append(opts, nats.CustomInboxPrefix(strings.TrimSuffix(wire.Inbox(n.Identity), ".")))
	}
	return opts, nil
}

// Logger returns a slog.Logger writing to w in the configured format
// ("text" or "json") at the configured level.
func (c *Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	switch c.LogLevel {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		// Durations as seconds (a float a person and a log pipeline both
		// read), not the handler's bare nanoseconds.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				return slog.Float64(a.Key, a.Value.Duration().Seconds())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// CallLog is the per-call logging LogCalls asks for, on logger.
func (c *Config) CallLog(logger *slog.Logger) middleware.CallLog {
	l := middleware.CallLog{Logger: logger, SampleEvery: c.LogCalls.Sample}
	switch c.LogCalls.Success {
	case "debug":
		l.Success = slog.LevelDebug
	case "off":
		l.SuccessOff = true
	}
	return l
}
