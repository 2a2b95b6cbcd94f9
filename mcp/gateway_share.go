package mcp

import (
	"net/http"
	"net/netip"
)

// Each source's fair share of GatewayOptions.MaxSessions: without it one
// client opening sessions and never ending them held them all, and every
// other client was refused until they expired.
//
// A source is the bearer token's identity when the gateway has Tokens,
// else the peer's address (an IPv6 peer's /64, the network one host is
// commonly given). X-Forwarded-For and the like are not read: any client
// can write them. So clients behind one NAT or reverse proxy are one
// source and share one share; give them tokens to tell them apart.

// sourceOf is the source an HTTP request counts toward.
func (g *Gateway) sourceOf(r *http.Request) string {
	if len(g.opts.Tokens) > 0 {
		return "identity " + g.identityOf(r)
	}
	return "address " + addressSource(r.RemoteAddr)
}

// addressSource is the source of a peer at remote (host:port): an IPv4
// address, or an IPv6 address's /64 network.
func addressSource(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// claim is an initialize makeRoom admitted whose session is not tracked
// yet: it counts toward the bound and its source's share until then, so
// a burst of initializes cannot end more sessions than its share. done
// is under g.mu.
type claim struct {
	source string
	done   bool
}

// makeRoom admits a new session of source when the gateway may hold
// limit sessions, or returns nil. Below limit it admits it. At limit it
// admits it when another source holds at least two more sessions than
// source: the least recently used session of a source holding the most
// (one without a call in flight first) is then ended for it. Otherwise
// (the source is among those holding the most) it refuses. Sessions that
// came through another transport than HTTP count toward limit but are
// never ended. The claim returned counts until track takes it or unclaim
// ends it.
func (g *Gateway) makeRoom(source string, limit int) *claim {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := &claim{source: source}
	if len(g.sessions)+g.claimed < limit {
		g.claim(c)
		return c
	}
	if g.closed {
		return nil // no goroutine to end a session on
	}
	held := map[string]int{}
	for s := range g.sessions {
		if s.source != "" {
			held[s.source]++
		}
	}
	for src, n := range g.claims {
		held[src] += n
	}
	most := 0
	for _, n := range held {
		most = max(most, n)
	}
	if most < held[source]+2 {
		return nil
	}
	var victim *gatewaySession
	var victimBusy bool
	var victimUsed uint64
	for s := range g.sessions {
		if s.source == "" || held[s.source] != most {
			continue
		}
		busy, used := s.usage()
		if victim == nil || (!busy && victimBusy) || (busy == victimBusy && used < victimUsed) {
			victim, victimBusy, victimUsed = s, busy, used
		}
	}
	if victim == nil {
		return nil // the most are claims still: their sessions are not tracked yet
	}
	ss := g.sessions[victim]
	delete(g.sessions, victim)
	if g.byID[victim.id] == victim {
		delete(g.byID, victim.id)
		g.rememberGoneLocked(victim, errSessionEvicted)
	}
	victim.evicted = true
	// Its calls first, then its close once their results are written.
	victim.end(errSessionEvicted)
	g.goroutine(func() { victim.close(ss) })
	g.claim(c)
	g.log.Info("mcp: gateway: session ended to make room for another source's", "session", victim.id, "identity", victim.identity,
		"source", victim.source, "held", most, "for", source, "for_held", held[source])
	return c
}

// claim counts c; g.mu is held.
func (g *Gateway) claim(c *claim) {
	if g.claims == nil {
		g.claims = map[string]int{}
	}
	g.claims[c.source]++
	g.claimed++
}

// unclaimLocked stops counting c (nil: none), once; g.mu is held.
func (g *Gateway) unclaimLocked(c *claim) {
	if c == nil || c.done {
		return
	}
	c.done = true
	if g.claims[c.source]--; g.claims[c.source] == 0 {
		delete(g.claims, c.source)
	}
	g.claimed--
}

// unclaim is unclaimLocked taking g.mu.
func (g *Gateway) unclaim(c *claim) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unclaimLocked(c)
}
