package config

import (
	"errors"
	"math/rand/v2"
	"slices"
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
// with opts. With one server it is nats.Connect. With several, the
// options are applied once (an option that fails is said once, before
// anything is dialled) and the list is dialled as nats.Connect dials it:
// a list that connects is dialled once, with no probe before it (each
// server's handshake, TLS and authentication happen once). When the list
// fails, nats.go's error is the last server its shuffled list tried (a
// refused connection there hides every other server's error behind "no
// servers available for connection"), which may not be the server that
// matters; so Dial then dials each server alone, in the order nats.go
// would try them (shuffled unless opts say nats.DontRandomize), with TLS
// asked of it when any URL of the list asks for TLS (as nats.go does for
// the whole list), until one takes the connection (a server that came
// up meanwhile): it then connects to the list with that server first,
// so that the connection keeps every server to reconnect to. When none
// does, the error is a ServersError of each one's failure, in the
// list's order. A refused connection says "connection refused". The
// handlers of opts (connect, closed, errors...) are not called for the
// servers dialled alone.
//
// Dial is safe for concurrent use. A list that fails has each server
// dialled twice (with the list, then alone), so it may take the connect
// timeout of opts twice for each server: the price of naming each one's
// failure, paid only when nothing answers.
func Dial(urls string, opts ...nats.Option) (*nats.Conn, error) {
	list := splitURLs(urls)
	if len(list) < 2 {
		return nats.Connect(urls, opts...)
	}
	o := nats.GetDefaultOptions()
	o.Servers = list
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	nc, err := o.Connect()
	if err == nil || preDial(err) {
		return nc, err
	}
	// The caller's handlers are for its connection, not for these.
	alone := o
	alone.ConnectedCB, alone.ClosedCB, alone.DisconnectedCB, alone.DisconnectedErrCB = nil, nil, nil, nil
	alone.ReconnectedCB, alone.ReconnectErrCB, alone.DiscoveredServersCB, alone.LameDuckModeHandler = nil, nil, nil, nil
	alone.AsyncErrorCB = func(*nats.Conn, *nats.Subscription, error) {}
	alone.RetryOnFailedConnect = false
	if anyAsksTLS(list) {
		if err := nats.Secure()(&alone); err != nil {
			return nil, err
		}
	}
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	if !o.NoRandomize {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	failed := make([]*ServerError, len(list))
	for _, i := range order {
		one := alone
		one.Servers = []string{list[i]}
		nc, err := one.Connect()
		if preDial(err) {
			return nil, err // the options', whatever the server
		}
		if err != nil {
			if errors.Is(err, nats.ErrNoServers) {
				// nats.go says a single server's refused connection so.
				err = refused{err}
			}
			failed[i] = &ServerError{URL: list[i], Err: err}
			continue
		}
		nc.Close()
		// The server that answered first, then the others (shuffled by
		// nats.go as it would the list).
		first := o
		first.Url = list[i]
		first.Servers = slices.Delete(slices.Clone(list), i, i+1)
		return first.Connect()
	}
	var each ServersError
	for _, f := range failed {
		if f != nil {
			each = append(each, f)
		}
	}
	return nil, each
}

// preDial reports whether err is one nats.go finds in the options
// before it dials: every server would say it.
func preDial(err error) bool {
	return errors.Is(err, nats.ErrBadTimeout) || errors.Is(err, nats.ErrNkeyAndUser) || errors.Is(err, nats.ErrNkeyButNoSigCB)
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
