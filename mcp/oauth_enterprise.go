package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolbus/toolbus/bus/wire"
)

// The enterprise grant (SEP-990, cross-app access): a person signs in to
// the enterprise identity provider once (toolctl mcp login:
// EnterpriseLogin, an OpenID Connect login) and the ID token goes to the
// grant store. A worker that the server answers 401 finds the server's
// authorization server in its protected resource metadata, exchanges the
// ID token at the IdP for an identity assertion (ID-JAG, RFC 8693 token
// exchange) and that for an access token at the authorization server (JWT
// bearer grant, RFC 7523, client authentication as the server's metadata
// asks). The IdP's policy decides; there is no consent screen per server.
// When the access token expires the exchange runs again; when the ID
// token expires, the person signs in again.
//
// This is the go-sdk's extauth.EnterpriseHandler with two differences: the
// IdP's metadata need not advertise PKCE (a token exchange uses none), and
// the JWT bearer grant authenticates with client_secret_basic where the
// authorization server lists only that.

// enterprise is a Client's auth.OAuthHandler for the enterprise grant.
type enterprise struct {
	cfg         *OAuthConfig
	server, url string
	store       GrantStore
	client      *http.Client

	mu    sync.Mutex                   // one exchange at a time
	token atomic.Pointer[oauth2.Token] // nil until the first exchange
}

func (c *Client) newEnterprise() (*enterprise, error) {
	e := &enterprise{cfg: c.cfg.OAuth, server: c.cfg.Name, url: c.cfg.URL, store: c.opts.Grants, client: &http.Client{Timeout: grantTimeout}}
	if e.store == nil {
		e.store = MemoryGrants()
	}
	return e, nil
}

// TokenSource gives the exchanged token while it is valid; without one,
// the request goes without and the 401 runs the exchange.
func (e *enterprise) TokenSource(context.Context) (oauth2.TokenSource, error) {
	t := e.token.Load()
	if t == nil || !t.Valid() {
		return nil, nil
	}
	return oauth2.StaticTokenSource(t), nil
}

func (e *enterprise) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	drainBody(resp)
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp) {
		return nil // not an authorization matter: the retry reports the 403
	}
	used, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.token.Load(); t != nil && t.Valid() && t.AccessToken != used {
		return nil // another request's exchange got a token meanwhile
	}
	t, err := e.exchange(ctx, resp)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", e.server, err)
	}
	e.token.Store(t)
	return nil
}

// exchange turns the stored ID token into an access token for the server.
func (e *enterprise) exchange(ctx context.Context, resp *http.Response) (*oauth2.Token, error) {
	id, err := e.idToken(ctx)
	if err != nil {
		return nil, err
	}
	prm, err := e.resourceMetadata(ctx, resp)
	if err != nil {
		return nil, err
	}
	as, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], e.client)
	if err != nil || as == nil {
		return nil, fmt.Errorf("the authorization server %s has no usable metadata (%v)", prm.AuthorizationServers[0], err)
	}
	idpToken, err := tokenEndpoint(ctx, e.cfg.IdPIssuer, e.client)
	if err != nil {
		return nil, err
	}
	o := e.cfg
	idp := &oauthex.ClientCredentials{ClientID: o.IdPClientID}
	if o.IdPClientSecret != "" {
		idp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.IdPClientSecret}
	}
	jag, err := oauthex.ExchangeToken(ctx, idpToken, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: as.Issuer, Resource: prm.Resource, Scope: o.Scopes,
		SubjectToken: id, SubjectTokenType: oauthex.TokenTypeIDToken,
	}, idp, e.client)
	if err != nil {
		return nil, fmt.Errorf("exchanging the sign-in at %s: %w", o.IdPIssuer, err)
	}
	style := oauth2.AuthStyleInParams
	if slices.Contains(as.TokenEndpointAuthMethodsSupported, "client_secret_basic") && !slices.Contains(as.TokenEndpointAuthMethodsSupported, "client_secret_post") {
		style = oauth2.AuthStyleInHeader
	}
	cfg := &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: as.TokenEndpoint, AuthStyle: style}}
	t, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, e.client), "",
		oauth2.SetAuthURLParam("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
		oauth2.SetAuthURLParam("assertion", jag.AccessToken))
	if err != nil {
		return nil, fmt.Errorf("the JWT bearer grant at %s: %w", as.TokenEndpoint, err)
	}
	return t, nil
}

// tokenEndpoint reads an identity provider's token endpoint from its
// metadata (OpenID Connect discovery, then OAuth authorization server
// metadata), checking its issuer and that the endpoint is https (or on a
// loopback address).
func tokenEndpoint(ctx context.Context, issuer string, c *http.Client) (string, error) {
	base := strings.TrimSuffix(issuer, "/")
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("the identity provider %q: %w", issuer, err)
	}
	origin := u.Scheme + "://" + u.Host
	// OpenID Connect appends the well-known path to the issuer; RFC 8414
	// inserts it before the issuer's path.
	metas := []string{base + "/.well-known/openid-configuration", origin + "/.well-known/oauth-authorization-server" + u.Path}
	if u.Path != "" {
		metas = append(metas, origin+"/.well-known/openid-configuration"+u.Path)
	}
	var errs []error
	for _, m := range metas {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m, nil)
		if err != nil {
			return "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var meta struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta)
		resp.Body.Close()
		switch {
		case resp.StatusCode != http.StatusOK:
			errs = append(errs, fmt.Errorf("%s: %s", m, resp.Status))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
		case strings.TrimSuffix(meta.Issuer, "/") != base:
			errs = append(errs, fmt.Errorf("%s: issuer %q is not %q", m, meta.Issuer, issuer))
		case !secureEndpoint(meta.TokenEndpoint):
			errs = append(errs, fmt.Errorf("%s: token endpoint %q is not https", m, meta.TokenEndpoint))
		default:
			return meta.TokenEndpoint, nil
		}
	}
	return "", fmt.Errorf("the identity provider %s: %w", issuer, errors.Join(errs...))
}

// secureEndpoint: an https URL, or http on a loopback address.
func secureEndpoint(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	return u.Scheme == "http" && loopbackHost(u.Hostname())
}

// resourceMetadata reads the server's protected resource metadata: from
// the challenge's resource_metadata, or the well-known URLs of its
// endpoint (path-specific first).
func (e *enterprise) resourceMetadata(ctx context.Context, resp *http.Response) (*oauthex.ProtectedResourceMetadata, error) {
	var urls []string
	if cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate")); err == nil {
		for _, c := range cs {
			if strings.EqualFold(c.Scheme, "bearer") && c.Params["resource_metadata"] != "" {
				urls = append(urls, c.Params["resource_metadata"])
			}
		}
	}
	u, err := url.Parse(e.url)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		urls = append(urls, origin+"/.well-known/oauth-protected-resource"+p)
	}
	urls = append(urls, origin+"/.well-known/oauth-protected-resource")
	var errs []error
	for _, m := range urls {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, m, e.url, e.client)
		if err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
		if err == nil {
			err = errors.New("no authorization server")
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	return nil, fmt.Errorf("no protected resource metadata: %w", errors.Join(errs...))
}

// idToken is the ID token a login stored.
func (e *enterprise) idToken(ctx context.Context) (string, error) {
	g, _, err := e.store.Load(ctx, e.server)
	if err != nil {
		return "", fmt.Errorf("reading the grant from the %s bucket: %w", wire.BucketOAuth, err)
	}
	if g == nil || g.URL != e.url || g.IDToken == "" {
		return "", fmt.Errorf("MCP server %q %w: run `toolctl --config FILE mcp login %s` to sign in to %s", e.server, ErrNeedsAuthorization, e.server, e.cfg.IdPIssuer)
	}
	if exp := jwtExpiry(g.IDToken); !exp.IsZero() && time.Now().After(exp) {
		return "", fmt.Errorf("MCP server %q %w: the sign-in to %s expired at %s; run `toolctl --config FILE mcp login %s`", e.server, ErrNeedsAuthorization, e.cfg.IdPIssuer, exp.Format(time.RFC3339), e.server)
	}
	return g.IDToken, nil
}

// jwtExpiry reads the exp claim of a JWT without checking it (the IdP
// checks it on the exchange; this only tells the person in time); zero
// when there is none.
func jwtExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 64<<10 {
		return time.Time{}
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp float64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(claims.Exp), 0)
}

// EnterpriseLogin signs the person in to the enterprise identity provider
// of a server with the enterprise grant (OpenID Connect, authorization
// code with PKCE, at cfg.OAuth.Redirect through fetch) and stores the ID
// token as the server's grant, for every worker.
func EnterpriseLogin(ctx context.Context, cfg ServerConfig, store GrantStore, fetch auth.AuthorizationCodeFetcher) error {
	o := cfg.OAuth
	if o == nil || o.Grant != GrantEnterprise {
		return fmt.Errorf("mcp: MCP server %q does not use the enterprise grant", cfg.Name)
	}
	creds := &oauthex.ClientCredentials{ClientID: o.IdPClientID}
	if o.IdPClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.IdPClientSecret}
	}
	t, err := extauth.PerformOIDCLogin(ctx, &extauth.OIDCLoginConfig{IssuerURL: o.IdPIssuer, Credentials: creds, RedirectURL: o.Redirect(),
		Scopes: []string{"openid"}, HTTPClient: &http.Client{Timeout: grantTimeout}}, fetch)
	if err != nil {
		return fmt.Errorf("mcp: signing in to %s: %w", o.IdPIssuer, err)
	}
	id, _ := t.Extra("id_token").(string)
	if id == "" {
		return fmt.Errorf("mcp: signing in to %s: the identity provider sent no ID token", o.IdPIssuer)
	}
	_, err = ReplaceGrant(ctx, store, cfg.Name, &Grant{URL: cfg.URL, IDToken: id, Updated: time.Now()})
	return err
}
