package config

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/urlredact"
)

// ServerError is the failure of one server of a list, dialled alone.
type ServerError struct {
	URL  string // the server's URL as given, secrets and all
	Err  error
	Note string // what likely caused Err (ConnNote's), "" for nothing
}

// Error names the server with its URL redacted, then its error and note.
func (e *ServerError) Error() string {
	s := urlredact.URL(e.URL) + ": " + e.Err.Error()
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	return s
}

func (e *ServerError) Unwrap() error { return e.Err }

// ServersError is the failures of the servers of a list, in the list's
// order, said on one line.
type ServersError []*ServerError

func (e ServersError) Error() string {
	parts := make([]string, len(e))
	for i, s := range e {
		parts[i] = s.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap gives errors.Is and errors.As each server's error.
func (e ServersError) Unwrap() []error {
	out := make([]error, len(e))
	for i, s := range e {
		out[i] = s
	}
	return out
}

// Dial connects to urls (comma-separated, as nats.Connect takes them)
// with opts. When that fails and urls names more than one server, the
// error nats.Connect returns is the last its shuffled list tried (a
// refused connection there hides every other server's error behind "no
// servers available for connection"), which may not be the server that
// matters. Each server is then dialled alone, in the list's order, with
// TLS asked of it when any URL of the list asks for TLS (as nats.go does
// for the whole list), and the error is a ServersError of each that
// failed; nats.Connect's stays when none fails alone. A refused
// connection says "connection refused". The handlers of opts (connect,
// closed, errors...) are not called for the servers dialled alone.
//
// Dial is safe for concurrent use; it may take the connect timeout of
// opts once for the list and once more for each server.
func Dial(urls string, opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(urls, opts...)
	list := splitURLs(urls)
	if err == nil || len(list) < 2 {
		return nc, err
	}
	// The caller's handlers are for its connection, not for these.
	alone := append(opts[:len(opts):len(opts)], nats.ConnectHandler(nil), nats.ClosedHandler(nil),
		nats.DisconnectHandler(nil), nats.DisconnectErrHandler(nil), nats.ReconnectHandler(nil),
		nats.ReconnectErrHandler(nil), nats.DiscoveredServersHandler(nil), nats.LameDuckModeHandler(nil),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if anyAsksTLS(list) {
		alone = append(alone, nats.Secure())
	}
	var each ServersError
	for _, u := range list {
		one, oerr := nats.Connect(u, alone...)
		if oerr == nil {
			one.Close()
			continue
		}
		if errors.Is(oerr, nats.ErrNoServers) {
			// nats.go says a single server's refused connection so.
			oerr = refused{oerr}
		}
		each = append(each, &ServerError{URL: u, Err: oerr})
	}
	if len(each) == 0 {
		return nil, err
	}
	return nil, each
}

// refused is a lone server's ErrNoServers: nats.go's word for a refused
// connection.
type refused struct{ err error }

func (r refused) Error() string { return "connection refused" }
func (r refused) Unwrap() error { return r.err }

// asksTLS reports whether the URL's scheme asks for TLS (tls://, or
// wss:// for a websocket), as nats.go reads it: what comes before the
// first "://", so that a "tls://" in a password or a path does not count.
func asksTLS(u string) bool {
	scheme, _, ok := strings.Cut(strings.TrimSpace(u), "://")
	return ok && (strings.EqualFold(scheme, "tls") || strings.EqualFold(scheme, "wss"))
}

// anyAsksTLS reports whether any of urls asks for TLS: nats.go then
// asks it of every server of the list.
func anyAsksTLS(urls []string) bool {
	for _, u := range urls {
		if asksTLS(u) {
			return true
		}
	}
	return false
}
