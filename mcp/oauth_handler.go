package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolbus/toolbus/bus/wire"
)

// oauthHandler is a Client's auth.OAuthHandler for the authorization_code
// grant: it sends the stored grant's token, refreshes it (one worker of
// the fleet at a time), and runs the authorization flow where it can
// (flow set: a person is there).
//
// Refreshing: a worker whose token is about to expire first marks the
// stored grant (RefreshingUntil, written by revision), refreshes, and
// stores the new grant by revision; the others wait for it, because an
// authorization server that rotates refresh tokens may take a second use
// of one as theft. A refresh is bounded by refreshTimeout, well inside
// refreshLease, after which the others stop waiting for a mark (measured
// from when they first see it, so that a clock running ahead cannot make
// them wait longer). A mark that cannot be written means no refresh.
type oauthHandler struct {
	server, url string
	store       GrantStore
	flow        *auth.AuthorizationCodeHandler // nil: this client cannot authorize
	client      *http.Client
	log         interface{ Warn(string, ...any) }

	// sem is held while reading or changing what follows (a channel, so
	// that a waiter can give up with its context).
	sem     chan struct{}
	grant   *Grant // nil: none
	rev     uint64
	loaded  bool
	refused string // an access token the server refused while it looked good
	// markRev is the revision of another worker's mark this one waits
	// for, seen first at markSeen.
	markRev  uint64
	markSeen time.Time
	// pending is a refreshed grant the store did not take (it failed):
	// used, and stored before anything else, while the store still holds
	// this worker's mark (revision pendingRev, refresh token pendingSpent,
	// spent).
	pending      *Grant
	pendingRev   uint64
	pendingSpent string
	// deadRefresh is a refresh token the authorization server refused
	// (invalid_grant), refreshedAT the access token this worker's last
	// refresh got: neither is tried again until another grant is stored.
	// A refresh that failed otherwise waits until refreshAfter.
	deadRefresh, refreshedAT string
	refreshAfter             time.Time
}

const (
	// grantTimeout bounds getting a token for one request, waiting for
	// another worker's refresh included.
	grantTimeout = 30 * time.Second
	// refreshTimeout bounds one refresh at the authorization server.
	refreshTimeout = 20 * time.Second
	// refreshLease is how long the others wait for a worker that marked
	// the grant as being refreshed.
	refreshLease = 60 * time.Second
	// storeTimeout bounds writing a refreshed grant back.
	storeTimeout = 10 * time.Second
)

func (c *Client) newOAuth() (auth.OAuthHandler, error) {
	o := c.cfg.OAuth
	switch o.Grant {
	case GrantClientCredentials:
		return newClientCredentials(o)
	case GrantEnterprise:
		return c.newEnterprise()
	}
	h := &oauthHandler{server: c.cfg.Name, url: c.cfg.URL, store: c.opts.Grants, client: &http.Client{Timeout: grantTimeout},
		log: c.log, sem: make(chan struct{}, 1)}
	if h.store == nil {
		h.store = MemoryGrants()
	}
	if c.opts.AuthorizationCodeFetcher == nil {
		return h, nil
	}
	redirect := o.Redirect()
	fc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: c.opts.AuthorizationCodeFetcher,
		// Workers refresh the grant for as long as it is good.
		RequestRefreshToken: true,
		Client:              h.client,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "toolbus",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		NewTokenSource: h.obtained,
	}
	if o.ClientID != "" {
		fc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			fc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	if o.ClientMetadataURL != "" {
		fc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if len(o.Scopes) > 0 {
		scopes := slices.Clone(o.Scopes)
		fc.ScopeFilter = func([]string) []string { return scopes }
	}
	flow, err := auth.NewAuthorizationCodeHandler(fc)
	if err != nil {
		return nil, &ConfigError{Server: c.cfg.Name, Field: "oauth", Reason: err.Error()}
	}
	h.flow = flow
	return h, nil
}

func (h *oauthHandler) lock(ctx context.Context) bool {
	select {
	case h.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (h *oauthHandler) unlock() { <-h.sem }

// TokenSource returns the grant's token source for requests of a
// connection: it gives up with the connection (ctx).
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return connTokens{h, ctx}, nil
}

type connTokens struct {
	h   *oauthHandler
	ctx context.Context
}

func (t connTokens) Token() (*oauth2.Token, error) { return t.h.token(t.ctx) }

// fresh: the grant's token is not about to expire and was not refused.
func (h *oauthHandler) fresh(g *Grant) bool { return g.fresh() && g.AccessToken != h.refused }

// usable is the token of the grant in use while it has not expired (a
// token about to expire is better than none), or nil.
func (h *oauthHandler) usable() *oauth2.Token {
	g := h.grant
	if g == nil || g.AccessToken == h.refused || !g.Expiry.IsZero() && time.Now().After(g.Expiry) {
		return nil
	}
	return g.token()
}

// token returns the grant's access token, refreshed when it is about to
// expire, or none (the request goes without and the server's 401 starts
// Authorize) when there is no usable grant.
func (h *oauthHandler) token(parent context.Context) (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(parent, grantTimeout)
	defer cancel()
	if !h.lock(ctx) {
		return nil, fmt.Errorf("MCP server %q: waiting for its OAuth token: %w", h.server, ctx.Err())
	}
	defer h.unlock()
	if h.pending != nil && !h.flushPending(ctx) {
		return h.pending.token(), nil // not stored yet: the fleet's only copy
	}
	if h.loaded && h.grant != nil && h.fresh(h.grant) {
		return h.grant.token(), nil
	}
	for range 100 { // each round reads the store anew; a conflict means someone else wrote
		if err := h.reload(ctx); err != nil {
			h.log.Warn("mcp: reading the stored OAuth grant", "err", err)
			return h.usable(), nil
		}
		g := h.grant
		switch {
		case g == nil:
			return nil, nil
		case h.fresh(g):
			return g.token(), nil
		case g.RefreshToken == "" || g.RefreshToken == h.deadRefresh || time.Now().Before(h.refreshAfter):
			return h.usable(), nil
		case h.markedByOther(g):
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-ctx.Done():
				return h.usable(), nil
			}
		}
		mark := *g
		mark.RefreshingUntil = time.Now().Add(refreshLease)
		rev, err := h.store.Save(ctx, h.server, &mark, h.rev)
		if errors.Is(err, ErrGrantChanged) {
			continue
		}
		if err != nil {
			// Without a mark, another worker could spend the same
			// refresh token: no refresh.
			h.log.Warn("mcp: marking the OAuth grant as being refreshed failed; not refreshing", "err", err)
			return h.usable(), nil
		}
		h.grant, h.rev = &mark, rev
		rctx, rcancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, h.client), refreshTimeout)
		// Only the refresh token: the access token may look good (and be
		// refused), and oauth2 would hand it back unrefreshed.
		t, err := g.config().TokenSource(rctx, &oauth2.Token{RefreshToken: g.RefreshToken}).Token()
		rcancel()
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
				h.deadRefresh = g.RefreshToken
				h.log.Warn("mcp: the authorization server refused the refresh token; the server's calls need a new login", "err", err)
			} else {
				h.refreshAfter = time.Now().Add(10 * time.Second)
				h.log.Warn("mcp: refreshing the OAuth token failed; trying again in 10s", "err", err)
			}
			h.unmark(g)
			return h.usable(), nil
		}
		h.refreshedAT = t.AccessToken
		h.stored(g, g.withToken(t))
		return t, nil
	}
	return h.usable(), nil
}

// markedByOther: another worker marked g as being refreshed and its mark
// has not lapsed.
func (h *oauthHandler) markedByOther(g *Grant) bool {
	if g.RefreshingUntil.IsZero() {
		return false
	}
	now := time.Now()
	if h.markRev != h.rev {
		h.markRev, h.markSeen = h.rev, now
	}
	// By this worker's clock alone: the writer's may be off either way.
	return now.Sub(h.markSeen) < refreshLease
}

// unmark takes the mark off the grant after a failed refresh, unless the
// grant changed meanwhile.
func (h *oauthHandler) unmark(g *Grant) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	u := *g
	u.RefreshingUntil = time.Time{}
	if rev, err := h.store.Save(ctx, h.server, &u, h.rev); err == nil {
		h.grant, h.rev = &u, rev
	}
}

// stored writes the grant a refresh of old made back. When another was
// stored meanwhile: a grant without old's refresh token (a login, or a
// refresh after this worker's mark lapsed) is taken instead; a deleted
// one (toolctl mcp logout) stays deleted; a grant still carrying the
// refresh token this worker spent is replaced. When the store fails, the
// grant stays pending: used by this worker and stored at its next token.
func (h *oauthHandler) stored(old, g *Grant) {
	h.pending, h.pendingRev, h.pendingSpent = g, h.rev, old.RefreshToken
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	for range 3 {
		if h.flushPending(ctx) {
			return
		}
	}
	h.log.Warn("mcp: storing the refreshed OAuth grant failed; this worker keeps it and stores it at its next request")
}

// flushPending stores the pending grant, or drops it for what the store
// holds now; it reports whether the pending grant is settled.
func (h *oauthHandler) flushPending(ctx context.Context) bool {
	rev, err := h.store.Save(ctx, h.server, h.pending, h.pendingRev)
	if err == nil {
		h.grant, h.rev, h.pending, h.loaded = h.pending, rev, nil, true
		return true
	}
	if !errors.Is(err, ErrGrantChanged) {
		return false
	}
	cur, rev, err := h.store.Load(ctx, h.server)
	switch {
	case err != nil && rev == 0:
		return false
	case cur == nil:
		h.grant, h.rev, h.pending = nil, rev, nil
		return true
	case cur.RefreshToken != h.pendingSpent:
		h.grant, h.rev, h.pending = cur, rev, nil
		return true
	}
	h.pendingRev = rev // still the grant whose refresh token was spent
	return false
}

// reload reads the store: the grant in use becomes the stored one (none
// when it is for another URL or unreadable). An error means the store
// could not be read at all.
func (h *oauthHandler) reload(ctx context.Context) error {
	if h.pending != nil {
		return nil // this worker's refreshed grant, not stored yet, is the one
	}
	g, rev, err := h.store.Load(ctx, h.server)
	if err != nil && rev == 0 {
		return err
	}
	if err != nil {
		h.log.Warn("mcp: the stored OAuth grant is unreadable; a login replaces it", "err", err)
	}
	if g != nil && g.URL != h.url {
		g = nil // a grant for another endpoint under the same name
	}
	h.grant, h.rev, h.loaded = g, rev, true
	return nil
}

// obtained is the flow's NewTokenSource: the token of a completed
// authorization replaces whatever grant is stored.
func (h *oauthHandler) obtained(ctx context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
	g := (&Grant{URL: h.url, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL,
		AuthStyle: cfg.Endpoint.AuthStyle, Scopes: cfg.Scopes}).withToken(t)
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if !h.lock(sctx) {
		return nil, sctx.Err()
	}
	defer h.unlock()
	rev, err := ReplaceGrant(sctx, h.store, h.server, g)
	if err != nil {
		return nil, fmt.Errorf("storing the grant: %w", err)
	}
	h.grant, h.rev, h.loaded, h.refused = g, rev, true, ""
	return connTokens{h, context.Background()}, nil
}

// ReplaceGrant stores g as the server's grant whatever is stored (a new
// authorization wins) and returns its revision.
func ReplaceGrant(ctx context.Context, store GrantStore, server string, g *Grant) (uint64, error) {
	for {
		_, rev, err := store.Load(ctx, server)
		if err != nil && rev == 0 {
			return 0, err
		}
		n, err := store.Save(ctx, server, g, rev)
		if !errors.Is(err, ErrGrantChanged) {
			return n, err
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}

// Authorize answers a 401 or 403. A grant stored since the request was
// sent (a login, another worker's refresh) is tried again; a token the
// server refused while it looked good is refreshed on the retry; then the
// flow runs where it can; otherwise the request fails with
// ErrNeedsAuthorization, which names the command to run.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	used, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !h.lock(ctx) {
		drainBody(resp)
		return ctx.Err()
	}
	err := h.reload(ctx)
	g := h.grant
	if h.pending != nil {
		g = h.pending
	}
	retry := err == nil && g != nil && g.AccessToken != used
	// A token refused while it looked good is refreshed once; not one
	// this worker has just refreshed, nor with a refresh token refused.
	if err == nil && !retry && g != nil && used != "" && resp.StatusCode == http.StatusUnauthorized && g.RefreshToken != "" &&
		h.refused != used && used != h.refreshedAT && g.RefreshToken != h.deadRefresh {
		h.refused, retry = used, true
	}
	h.unlock()
	switch {
	case err != nil:
		drainBody(resp)
		return fmt.Errorf("MCP server %q: reading its OAuth grant from the %s bucket: %w", h.server, wire.BucketOAuth, err)
	case retry:
		drainBody(resp)
		return nil
	case h.flow != nil:
		return h.flow.Authorize(ctx, req, resp)
	}
	drainBody(resp)
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp) {
		return nil // not an authorization matter: the retry reports the 403
	}
	why := ""
	switch {
	case resp.StatusCode == http.StatusForbidden:
		why = " with more scopes"
	case g != nil:
		why = " again (the stored grant was refused)"
	}
	return fmt.Errorf("MCP server %q %w%s: run `toolctl --config FILE mcp login %s` where a browser is; workers take the grant from the %s bucket", h.server, ErrNeedsAuthorization, why, h.server, wire.BucketOAuth)
}

// insufficientScope: a 403 that asks for more scopes (step-up).
func insufficientScope(resp *http.Response) bool {
	return strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), " "), "insufficient_scope")
}

func drainBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}
