package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
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
// the refreshed grant back, one worker at a time (oauth_handler.go), so a
// refresh token that the authorization server rotates is spent once for
// the whole fleet. A worker with no grant, or whose
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
	// GrantEnterprise is enterprise-managed authorization (SEP-990,
	// cross-app access; oauth_enterprise.go).
	GrantEnterprise = "enterprise"
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
	// grant), "client_credentials" (each worker obtains tokens with
	// ClientID and ClientSecret, no person and no shared grant: for
	// servers that admit services as themselves) or "enterprise" (a person
	// signs in to the enterprise identity provider IdPIssuer with toolctl
	// mcp login; workers exchange that identity for tokens, as the IdP's
	// policy allows, with no consent screen per server).
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
	// IdPIssuer, IdPClientID and IdPClientSecret (empty for a public
	// client) are the enterprise identity provider and this client there,
	// for the enterprise grant.
	IdPIssuer       string `yaml:"idp_issuer,omitempty" json:"idp_issuer,omitempty"`
	IdPClientID     string `yaml:"idp_client_id,omitempty" json:"idp_client_id,omitempty"`
	IdPClientSecret string `yaml:"idp_client_secret,omitempty" json:"idp_client_secret,omitempty"`
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
		if o.ClientMetadataURL != "" || o.RedirectURL != "" || len(o.Scopes) > 0 {
			fail("oauth", "client_metadata_url, redirect_url and scopes are for the authorization_code grant (client_credentials requests the scopes the server names)")
		}
	case GrantEnterprise:
		if o.ClientID == "" || o.IdPIssuer == "" || o.IdPClientID == "" {
			fail("oauth", "the enterprise grant needs client_id (at the server's authorization server), idp_issuer and idp_client_id")
		} else if err := checkHTTPURL(o.IdPIssuer); err != nil {
			fail("oauth.idp_issuer", "invalid URL %q: %v", o.IdPIssuer, err)
		}
		if o.ClientMetadataURL != "" {
			fail("oauth.client_metadata_url", "is for the authorization_code grant")
		}
	default:
		fail("oauth.grant", "invalid grant %q: want %s, %s or %s", o.Grant, GrantAuthorizationCode, GrantClientCredentials, GrantEnterprise)
	}
	if o.Grant != GrantEnterprise && (o.IdPIssuer != "" || o.IdPClientID != "" || o.IdPClientSecret != "") {
		fail("oauth", "idp_issuer, idp_client_id and idp_client_secret are for the enterprise grant")
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
	// IDToken is the person's OpenID Connect ID token from the enterprise
	// identity provider (the enterprise grant), which workers exchange for
	// access tokens.
	IDToken string `json:"id_token,omitempty"`
	// RefreshingUntil, when set, says a worker is refreshing the token
	// (until then, by its clock): the others wait for the grant it stores.
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
	// error when there is none. A stored value that is not a grant is an
	// error with its revision (so that a new grant can replace it).
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
	if err != nil {
		return nil, e.rev, err
	}
	return g, e.rev, nil
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

// decodeGrant decodes a stored grant strictly: one JSON object of a
// Grant's fields and no other, with the URL it is for. A server's JSON
// answer stored under the key (an API response, a publish's
// acknowledgement: KVGrants.Load) has fields no grant has.
func decodeGrant(b []byte) (*Grant, error) {
	if len(b) > maxGrantSize {
		return nil, fmt.Errorf("mcp: stored grant of %d bytes (more than %d)", len(b), maxGrantSize)
	}
	var g Grant
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&g); err != nil {
		return nil, fmt.Errorf("mcp: stored grant: %w", err)
	}
	if d.More() {
		return nil, errors.New("mcp: stored grant: data after the JSON value")
	}
	if g.URL == "" {
		return nil, errors.New("mcp: stored grant: no url")
	}
	return &g, nil
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
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp) {
		drainBody(resp)
		return nil // not an authorization matter: the retry reports the 403
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h.Authorize(context.WithoutCancel(ctx), req, resp)
}
