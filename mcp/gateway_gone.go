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
// found".

// maxGone bounds the ended sessions remembered (their ids and why), the
// oldest forgotten first: about 100 bytes each.
const maxGone = 1024

// goneSession is why a session ended (errSessionIdle, errSessionEvicted,
// errSessionDeleted or errGatewayClosed), and whose it was: only its
// identity is told.
type goneSession struct {
	identity string
	cause    error
}

// rememberGoneLocked notes that s, an HTTP session, ended for cause, when
// that is one a client is told (goneSession). g.mu is held.
func (g *Gateway) rememberGoneLocked(s *gatewaySession, cause error) {
	if s.source == "" || g.goneWhy(cause) == "" {
		return
	}
	if _, ok := g.gone[s.id]; ok {
		return
	}
	if g.gone == nil {
		g.gone = map[string]goneSession{}
	}
	if len(g.goneOrder) == maxGone {
		delete(g.gone, g.goneOrder[0])
		g.goneOrder = g.goneOrder[1:]
	}
	g.gone[s.id] = goneSession{identity: s.identity, cause: cause}
	g.goneOrder = append(g.goneOrder, s.id)
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
		return "the gateway was closed"
	}
	return ""
}

// goneText is the answer to a request of identity naming session id, one
// the gateway does not hold, when it remembers why that session ended;
// "" otherwise (the go-sdk answers).
func (g *Gateway) goneText(id, identity string) string {
	g.mu.Lock()
	gs, ok := g.gone[id]
	g.mu.Unlock()
	if !ok || gs.identity != identity {
		return ""
	}
	return "session not found: " + g.goneWhy(gs.cause) + "; initialize a new session"
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
