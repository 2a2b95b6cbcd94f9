package mcp

import (
	"errors"
	"fmt"
	"net/http"
)

// A client whose session the gateway ended for its bounds (SessionTimeout,
// MaxSessions) may have had no request open to hear why: an idle session's
// calls' GatewayIdleClosedText reached only the gateway's log. Nor is a
// client told that its session ended by its own DELETE (another process
// of the client, or one that lost the DELETE's answer) or by the
// gateway's Close (a gateway mounted on a server that goes on serving).
// When it comes back with the session's id it is answered 404, as MCP
// wants for a session that ended (the client initializes a new one; the
// go-sdk's client sees ErrSessionMissing, a plain-text body leaves that
// so), with a text saying why, rather than the go-sdk's bare "session not
// found". Once the gateway is closed, the text says so, and that it
// opens no new sessions, instead of to initialize one: its initialize
// would be answered 503 (serveHTTP). The status stays 404, which is true
// of the session; the 503 is what a client is told of the gateway (the
// go-sdk's takes it for a passing refusal: its Connect fails, to be tried
// again later, against a gateway serving there by then).

// maxGone bounds the ended sessions remembered (their ids and why):
// about 150 bytes each.
//
// They are remembered by source, as MaxSessions counts sessions
// (sourceOf): the bearer token's identity when the gateway has Tokens,
// else the peer's address (an IPv6 peer's /64). Those are the identities
// the gateway knows a client by: it authenticates HTTP clients by bearer
// token or not at all (it serves no OAuth of its own; the package's OAuth
// is a worker's, to mounted servers), and without tokens every session
// calls as Client.Identity, which tells no client from another, while a
// peer's address is not the client's to choose (X-Forwarded-For is not
// read). At the bound, the oldest record of the source holding the most
// is forgotten (the new record's own source's when it is among those
// holding the most): a client that opens and ends sessions in a loop
// forgets its own records, not another's, and a source's record goes only
// when no source holds more than it does, which takes a flood from about
// maxGone sources at once. Clients behind one NAT or proxy, or sharing a
// token, are one source, and share.
const maxGone = 1024

// goneSession is why a session ended (errSessionIdle, errSessionEvicted,
// errSessionDeleted or errGatewayClosed), and whose it was: only its
// identity is told.
type goneSession struct {
	identity string
	cause    error
}

// goneEntry is a remembered session of a source's (Gateway.goneBySource):
// its id, and when it was remembered (Gateway.goneSeq).
type goneEntry struct {
	id  string
	seq uint64
}

// rememberGoneLocked notes that s, an HTTP session, ended for cause, when
// that is one a client is told (goneSession), making room at the bound
// (maxGone). g.mu is held.
func (g *Gateway) rememberGoneLocked(s *gatewaySession, cause error) {
	if s.source == "" || g.goneWhy(cause) == "" {
		return
	}
	if _, ok := g.gone[s.id]; ok {
		return
	}
	if g.gone == nil {
		g.gone = map[string]goneSession{}
		g.goneBySource = map[string][]goneEntry{}
	}
	if len(g.gone) >= maxGone {
		g.forgetGoneLocked(s.source)
	}
	g.goneSeq++
	g.gone[s.id] = goneSession{identity: s.identity, cause: cause}
	g.goneBySource[s.source] = append(g.goneBySource[s.source], goneEntry{id: s.id, seq: g.goneSeq})
}

// forgetGoneLocked forgets the oldest record of the source holding the
// most: source's own when it is one of them, else the one whose oldest
// record is the oldest. g.mu is held.
func (g *Gateway) forgetGoneLocked(source string) {
	victim := ""
	for src, q := range g.goneBySource {
		if victim == "" {
			victim = src
			continue
		}
		v := g.goneBySource[victim]
		if len(q) > len(v) || len(q) == len(v) && q[0].seq < v[0].seq {
			victim = src
		}
	}
	if n := len(g.goneBySource[source]); n > 0 && n == len(g.goneBySource[victim]) {
		victim = source
	}
	q := g.goneBySource[victim]
	if len(q) == 0 {
		return
	}
	delete(g.gone, q[0].id)
	q[0] = goneEntry{} // the array outlives the slice's start
	if q = q[1:]; len(q) == 0 {
		delete(g.goneBySource, victim)
	} else {
		g.goneBySource[victim] = q
	}
}

// goneWhy is why a session ended for cause, in the words a client is
// told; "" for a cause not told.
func (g *Gateway) goneWhy(cause error) string {
	switch {
	case errors.Is(cause, errSessionIdle):
		return fmt.Sprintf("the gateway closed it, idle for longer than its session timeout (%v)", g.opts.SessionTimeout)
	case errors.Is(cause, errSessionEvicted):
		return "the gateway ended it to make room for another client's session (too many were open from this client's address or identity)"
	case errors.Is(cause, errSessionDeleted):
		return "the client ended it (DELETE)"
	case errors.Is(cause, errGatewayClosed):
		return "the gateway ended it as it shut down (Close)"
	}
	return ""
}

// goneText is the answer to a request of identity naming session id, one
// the gateway does not hold, when it remembers why that session ended;
// "" otherwise (the go-sdk answers).
func (g *Gateway) goneText(id, identity string) string {
	g.mu.Lock()
	gs, ok := g.gone[id]
	closed := g.closed
	g.mu.Unlock()
	if !ok || gs.identity != identity {
		return ""
	}
	next := "initialize a new session"
	if closed {
		next = closedText
	}
	return "session not found: " + g.goneWhy(gs.cause) + "; " + next
}

// closedText is what a client is told of a closed gateway: answering a
// request of a session that ended (goneText), and an initialize (503).
const closedText = "the gateway is closed and opens no new sessions"

// isClosed reports whether Close has been called.
func (g *Gateway) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// answerGone answers r, a request naming a session the gateway does not
// hold, when it remembers why that session ended, and reports whether it
// did.
func (g *Gateway) answerGone(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" || g.sdkRefuses(r) {
		return false
	}
	text := g.goneText(id, g.identityOf(r))
	if text == "" {
		return false
	}
	http.Error(w, text, http.StatusNotFound)
	return true
}
