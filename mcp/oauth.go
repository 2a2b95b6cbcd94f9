package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolbus/toolbus/bus/wire"
)

// OAuth for Streamable HTTP servers (MCP authorization, 2025-11-25): a
// server that answers 401 with a WWW-Authenticate challenge is authorized
// by the OAuth 2.1 authorization code flow with PKCE (the go-sdk's
// auth.AuthorizationCodeHandler: protected resource and authorization
// server metadata discovery, client ID metadata document, pre-registered
// client or dynamic registration, scopes from the challenge, step-up on
// 403 insufficient_scope).
//
// A flow needs a person to approve it in a browser, and workers have
// none. So the flow runs where a person is (toolctl mcp login, or a Go
// program that sets Options.AuthorizationCodeFetcher), and what it yields,
// a Grant (the tokens and the client they were issued to), is kept in a
// GrantStore that every worker mounting the server reads: the fleet's KV
// bucket toolbus_oauth (KVGrants), keyed by the server's name. A worker
// sends the grant's access token, refreshes it when it expires and writes
// the refreshed grant back, so a refresh token that the authorization
// server rotates is spent once for the whole fleet (a worker whose refresh
// lost the race takes the winner's grant). A worker with no grant, or whose
// grant was revoked, cannot authorize on its own: its calls and its mount
// fail with ErrNeedsAuthorization, which names the command to run, and the
// mount is retried in the background until a grant appears.

// DefaultRedirectURL is where the authorization server sends the person's
// browser back to when OAuthConfig.RedirectURL is empty: toolctl mcp login
// listens there for the code.
const DefaultRedirectURL = "http://127.0.0.1:8976/callback"

// The grants of OAuthConfig.Grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig turns on OAuth for a Streamable HTTP server
// (ServerConfig.OAuth). The zero value is valid: the client registers
// itself dynamically where the authorization server allows it.
//
//	mcp_servers:
//	  - name: tracker
//	    url: https://tracker.example.com/mcp
//	    oauth:
//	      client_id: toolbus-fleet        # registered with the server's authorization server
//	      client_secret: s3cret           # for a confidential client
//	      scopes: [issues:read]           # instead of the ones the server asks for
type OAuthConfig struct {
	// Grant is how tokens are obtained: "authorization_code" (the default:
	// a person authorizes once with toolctl mcp login, workers share the
	// grant) or "client_credentials" (each worker obtains tokens with
	// ClientID and ClientSecret, no person and no shared grant: for
	// servers that admit services as themselves).
	Grant string `yaml:"grant,omitempty" json:"grant,omitempty"`
	// ClientID and ClientSecret are a client registered with the
	// authorization server beforehand (ClientSecret empty for a public
	// client). Without them the client registers itself (dynamic client
	// registration) when the authorization server offers it.
	ClientID     string `yaml:"client_id,omitempty" json:"client_id,omitempty"`
	ClientSecret string `yaml:"client_secret,omitempty" json:"client_secret,omitempty"`
	// ClientMetadataURL is the https URL of a client ID metadata document
	// describing this client; it is used first, where the authorization
	// server supports such documents.
	ClientMetadataURL string `yaml:"client_metadata_url,omitempty" json:"client_metadata_url,omitempty"`
	// RedirectURL is where the browser returns with the code;
	// DefaultRedirectURL when empty. toolctl mcp login listens on it, so
	// for that it must be an http URL on a loopback address.
	RedirectURL string `yaml:"redirect_url,omitempty" json:"redirect_url,omitempty"`
	// Scopes, when set, are requested instead of those the server's
	// challenge or metadata name.
	Scopes []string `yaml:"scopes,omitempty" json:"scopes,omitempty"`
}

// Redirect is the redirect URL: RedirectURL, or DefaultRedirectURL.
func (o *OAuthConfig) Redirect() string {
	if o.RedirectURL == "" {
		return DefaultRedirectURL
	}
	return o.RedirectURL
}

// validate reports the problems of the oauth block of a server.
func (o *OAuthConfig) validate(c *ServerConfig, fail func(field, format string, args ...any)) {
	if c.Transport != TransportStreamableHTTP {
		fail("oauth", "OAuth is for streamable-http servers, not %s", c.Transport)
	}
	for k := range c.Headers {
		if strings.EqualFold(k, "Authorization") {
			fail("oauth", "give either oauth or an Authorization header, not both")
		}
	}
	switch o.Grant {
	case "", GrantAuthorizationCode:
		if o.ClientSecret != "" && o.ClientID == "" {
			fail("oauth.client_secret", "a client secret needs its client_id")
		}
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecret == "" {
			fail("oauth", "the client_credentials grant needs client_id and client_secret")
		}
		if o.ClientMetadataURL != "" || o.RedirectURL != "" {
			fail("oauth", "client_metadata_url and redirect_url are for the authorization_code grant")
		}
	default:
		fail("oauth.grant", "invalid grant %q: want %s or %s", o.Grant, GrantAuthorizationCode, GrantClientCredentials)
	}
	if u := o.ClientMetadataURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" || p.Path == "" || p.Path == "/" {
			fail("oauth.client_metadata_url", "%q is not an https URL with a path", u)
		}
	}
	if err := checkHTTPURL(o.Redirect()); err != nil {
		fail("oauth.redirect_url", "invalid URL %q: %v", o.RedirectURL, err)
	}
	if slices.Contains(o.Scopes, "") {
		fail("oauth.scopes", "contains an empty scope")
	}
}

// Grant is what an authorization yields for one server: the token and
// the client it was issued to, all a worker needs to send and refresh it.
// It is stored as JSON; the tokens and the client secret are secrets.
type Grant struct {
	// URL is the server's endpoint: a grant for another URL under the
	// same name is not used.
	URL          string           `json:"url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	AccessToken  string           `json:"access_token"`
	TokenType    string           `json:"token_type,omitempty"`
	RefreshToken string           `json:"refresh_token,omitempty"`
	Expiry       time.Time        `json:"expiry,omitzero"`
	// Updated is when the grant was obtained or last refreshed.
	Updated time.Time `json:"updated"`
	// RefreshingUntil, while in the future, says a worker is refreshing
	// the token: the others wait for the grant it stores.
	RefreshingUntil time.Time `json:"refreshing_until,omitzero"`
}

func (g *Grant) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: g.AccessToken, TokenType: g.TokenType, RefreshToken: g.RefreshToken, Expiry: g.Expiry}
}

func (g *Grant) config() *oauth2.Config {
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
}

// fresh: the access token is not about to expire (oauth2's ten seconds).
func (g *Grant) fresh() bool { return g.token().Valid() }

// withToken is a copy carrying t (a refresh may omit the refresh token:
// the old one stays).
func (g *Grant) withToken(t *oauth2.Token) *Grant {
	n := *g
	n.AccessToken, n.TokenType, n.Expiry = t.AccessToken, t.TokenType, t.Expiry
	if t.RefreshToken != "" {
		n.RefreshToken = t.RefreshToken
	}
	n.Updated, n.RefreshingUntil = time.Now(), time.Time{}
	return &n
}

// GrantStore keeps servers' grants where every worker that mounts them
// reads them. Revisions order the grants of one server; 0 means none.
type GrantStore interface {
	// Load returns the server's grant and its revision; nil, 0 and no
	// error when there is none.
	Load(ctx context.Context, server string) (*Grant, uint64, error)
	// Save stores g if the server's stored revision is still rev (0: none
	// stored) and returns the new revision; ErrGrantChanged when another
	// grant was stored meanwhile.
	Save(ctx context.Context, server string, g *Grant, rev uint64) (uint64, error)
	// Delete removes the server's grant; no grant is not an error.
	Delete(ctx context.Context, server string) error
}

// grantWatcher is a GrantStore that tells of newly stored grants
// (KVGrants): a client waiting for a login retries at once.
type grantWatcher interface {
	Watch(ctx context.Context, server string, changed func())
}

var (
	// ErrGrantChanged is GrantStore.Save's answer when the stored grant is
	// not the one the caller read.
	ErrGrantChanged = errors.New("mcp: the stored grant changed")
	// ErrNeedsAuthorization is wrapped when a server wants an OAuth
	// authorization that this client cannot run (no
	// Options.AuthorizationCodeFetcher) and no stored grant serves.
	ErrNeedsAuthorization = errors.New("needs authorization")
)

// MemoryGrants returns a GrantStore in memory: grants live as long as
// the process and are shared by the clients given it.
func MemoryGrants() GrantStore { return &memoryGrants{m: map[string]memGrant{}} }

type memGrant struct {
	g   []byte
	rev uint64
}

type memoryGrants struct {
	mu  sync.Mutex
	m   map[string]memGrant
	seq uint64
}

func (s *memoryGrants) Load(_ context.Context, server string) (*Grant, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[server]
	if !ok {
		return nil, 0, nil
	}
	g, err := decodeGrant(e.g)
	return g, e.rev, err
}

func (s *memoryGrants) Save(_ context.Context, server string, g *Grant, rev uint64) (uint64, error) {
	b, err := encodeGrant(g)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[server].rev != rev {
		return 0, ErrGrantChanged
	}
	s.seq++
	s.m[server] = memGrant{g: b, rev: s.seq}
	return s.seq, nil
}

func (s *memoryGrants) Delete(_ context.Context, server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, server)
	return nil
}

// maxGrantSize bounds a stored grant read back (a KV value may be
// anything someone put there).
const maxGrantSize = 64 << 10

func encodeGrant(g *Grant) ([]byte, error) { return json.Marshal(g) }

func decodeGrant(b []byte) (*Grant, error) {
	if len(b) > maxGrantSize {
		return nil, fmt.Errorf("mcp: stored grant of %d bytes (more than %d)", len(b), maxGrantSize)
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("mcp: stored grant: %w", err)
	}
	return &g, nil
}

// oauthHandler is a Client's auth.OAuthHandler: it sends the stored
// grant's token, refreshes it, and runs the authorization flow where it
// can (flow set).
type oauthHandler struct {
	server, url string
	store       GrantStore
	flow        *auth.AuthorizationCodeHandler // nil: this client cannot authorize
	client      *http.Client
	log         interface{ Warn(string, ...any) }

	mu     sync.Mutex
	grant  *Grant // nil: none
	rev    uint64
	loaded bool
}

// grantTimeout bounds a store access or a refresh made while sending.
const grantTimeout = 30 * time.Second

func (c *Client) newOAuth() (auth.OAuthHandler, error) {
	o := c.cfg.OAuth
	if o.Grant == GrantClientCredentials {
		return newClientCredentials(o)
	}
	h := &oauthHandler{server: c.cfg.Name, url: c.cfg.URL, store: c.opts.Grants, client: &http.Client{Timeout: grantTimeout}, log: c.log}
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

// TokenSource is the handler itself: its Token is the grant's.
func (h *oauthHandler) TokenSource(context.Context) (oauth2.TokenSource, error) { return h, nil }

// Token returns the grant's access token, refreshed when it is about to
// expire, or no token (the request goes without and the server's 401
// starts Authorize) when there is no usable grant.
//
// One worker of the fleet refreshes at a time: it first marks the stored
// grant as being refreshed (RefreshingUntil, written by revision), and the
// others wait for the grant it stores, because an authorization server
// that rotates refresh tokens may take a second use of one as theft and
// revoke them all. A mark whose worker died lapses after refreshLease.
func (h *oauthHandler) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), grantTimeout)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded {
		h.reload(ctx)
	}
	if h.grant != nil && h.grant.fresh() {
		return h.grant.token(), nil
	}
	for {
		h.reload(ctx) // another worker may have refreshed it already
		g := h.grant
		switch {
		case g == nil || g.RefreshToken == "" && !g.fresh():
			return nil, nil
		case g.fresh():
			return g.token(), nil
		case time.Now().Before(g.RefreshingUntil):
			// Another worker is refreshing: wait for its grant.
			select {
			case <-time.After(50 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil, nil
			}
		}
		mark := *g
		mark.RefreshingUntil = time.Now().Add(refreshLease)
		rev, err := h.store.Save(ctx, h.server, &mark, h.rev)
		if errors.Is(err, ErrGrantChanged) {
			continue
		}
		if err == nil {
			h.grant, h.rev = &mark, rev
		} else {
			h.log.Warn("mcp: marking the OAuth grant as being refreshed; refreshing anyway", "err", err)
		}
		rctx := context.WithValue(ctx, oauth2.HTTPClient, h.client)
		t, err := g.config().TokenSource(rctx, g.token()).Token()
		if err != nil {
			h.log.Warn("mcp: refreshing the OAuth token failed; the server's next 401 asks for a new authorization", "err", err)
			h.store1(ctx, g) // unmarked: nobody waits for this refresh
			return nil, nil
		}
		h.store1(ctx, g.withToken(t))
		return t, nil
	}
}

// refreshLease is how long a worker may take to refresh a grant before
// the others stop waiting for it.
const refreshLease = 15 * time.Second

// reload reads the store and reports whether it held a newer grant (which
// is now the one used). h.mu is held.
func (h *oauthHandler) reload(ctx context.Context) bool {
	h.loaded = true
	g, rev, err := h.store.Load(ctx, h.server)
	if err != nil {
		h.log.Warn("mcp: reading the stored OAuth grant", "err", err)
		return false
	}
	if g != nil && g.URL != h.url {
		g = nil // a grant for another endpoint under the same name
	}
	if rev == h.rev && (g == nil) == (h.grant == nil) {
		return false
	}
	h.grant, h.rev = g, rev
	return g != nil
}

// store1 saves g as the successor of the grant in use and uses it; when
// another grant was stored meanwhile, the newer fresh one is kept. h.mu is
// held.
func (h *oauthHandler) store1(ctx context.Context, g *Grant) {
	rev, err := h.store.Save(ctx, h.server, g, h.rev)
	if errors.Is(err, ErrGrantChanged) {
		if h.reload(ctx) && h.grant.fresh() {
			return
		}
		rev, err = h.store.Save(ctx, h.server, g, h.rev)
	}
	if err != nil {
		h.log.Warn("mcp: storing the OAuth grant; other workers will not see it", "err", err)
	} else {
		h.rev = rev
	}
	h.grant = g
}

// obtained is the flow's NewTokenSource: the token of a completed
// authorization becomes the stored grant.
func (h *oauthHandler) obtained(ctx context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
	g := (&Grant{URL: h.url, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL,
		AuthStyle: cfg.Endpoint.AuthStyle, Scopes: cfg.Scopes}).withToken(t)
	sctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loaded = true
	if _, rev, err := h.store.Load(sctx, h.server); err == nil {
		h.rev = rev // a new authorization replaces whatever is stored
	}
	h.store1(sctx, g)
	return h, nil
}

// Authorize answers a 401 or 403: a grant stored since the one in use (a
// login, another worker's refresh) is tried first; then the flow runs
// where it can; otherwise the request fails with ErrNeedsAuthorization.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	newer := h.reload(ctx)
	h.mu.Unlock()
	if newer {
		drainBody(resp)
		return nil
	}
	if h.flow != nil {
		return h.flow.Authorize(ctx, req, resp)
	}
	drainBody(resp)
	if resp.StatusCode == http.StatusForbidden && !strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), " "), "insufficient_scope") {
		return nil // not an authorization matter: the retry reports the 403
	}
	why := ""
	switch {
	case resp.StatusCode == http.StatusForbidden:
		why = " with more scopes"
	case h.grant != nil:
		why = " again (the stored grant was refused)"
	}
	return fmt.Errorf("MCP server %q %w%s: run `toolctl --config FILE mcp login %s` where a browser is; workers take the grant from the %s bucket", h.server, ErrNeedsAuthorization, why, h.server, wire.BucketOAuth)
}

func drainBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// LoopbackAuthorizer returns an AuthorizationCodeFetcher for a person at
// this machine: it listens on redirectURL (an http URL on a loopback
// address), calls show with the authorization URL to open in a browser,
// and returns the code the browser brings back to redirectURL. Close
// stops listening.
func LoopbackAuthorizer(redirectURL string, show func(authURL string)) (auth.AuthorizationCodeFetcher, io.Closer, error) {
	u, err := url.Parse(redirectURL)
	if err != nil || u.Scheme != "http" {
		return nil, nil, fmt.Errorf("mcp: the redirect URL %q must be an http URL on this machine to receive the code", redirectURL)
	}
	if ip := net.ParseIP(u.Hostname()); (ip == nil || !ip.IsLoopback()) && u.Hostname() != "localhost" {
		return nil, nil, fmt.Errorf("mcp: the redirect URL %q must be on a loopback address (127.0.0.1, [::1] or localhost) to receive the code here", redirectURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	ln, err := net.Listen("tcp", host)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: listening for the authorization code at %s: %w", redirectURL, err)
	}
	results := make(chan *auth.AuthorizationResult, 1)
	path := cmpPath(u.Path)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cmpPath(r.URL.Path) != path {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			http.Error(w, "Authorization failed: "+e+" "+q.Get("error_description"), http.StatusBadRequest)
		} else {
			fmt.Fprintln(w, "toolbus is authorized. You can close this page.")
		}
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		for len(results) > 0 { // a stale answer of an earlier flow
			<-results
		}
		show(args.URL)
		select {
		case r := <-results:
			if r.Code == "" {
				return nil, errors.New("the authorization server sent the browser back without a code (denied?)")
			}
			return r, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the browser to come back to %s: %w", redirectURL, ctx.Err())
		}
	}
	return fetch, srv, nil
}

func cmpPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// clientCredentials is the client_credentials grant: the go-sdk's handler
// (discovery, then the token endpoint), made safe for the sessions of one
// Client at once, and given a context its token source can keep: the
// handler's token source fetches the next token with the context of the
// Authorize that made it, which is the request's, long over by then.
type clientCredentials struct {
	mu sync.Mutex
	h  *extauth.ClientCredentialsHandler
}

func newClientCredentials(o *OAuthConfig) (*clientCredentials, error) {
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}},
		HTTPClient:  &http.Client{Timeout: grantTimeout},
	})
	if err != nil {
		return nil, err
	}
	return &clientCredentials{h: h}, nil
}

func (c *clientCredentials) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h.TokenSource(ctx)
}

func (c *clientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h.Authorize(context.WithoutCancel(ctx), req, resp)
}
