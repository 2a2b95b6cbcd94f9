package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/oauthtest"
	"github.com/toolbus/toolbus/toolkit"
)

// freeRedirect is a redirect URL on a loopback port nobody listens on.
func freeRedirect(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String() + "/callback"
}

// browser is the person at the machine: it opens the authorization URL
// and follows the redirects back to the loopback listener.
func browser(t *testing.T) func(string) {
	return func(u string) {
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			resp.Body.Close()
		}()
	}
}

// TestOAuthGrantSharedByWorkers: one login (a client with a fetcher, as
// toolctl mcp login is) stores the grant in the fleet's KV bucket; clients
// without a fetcher (workers) use it and refresh it, one at a time, so
// the rotating refresh token is never presented twice; a client with no
// grant says what to run.
func TestOAuthGrantSharedByWorkers(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(time.Second) // every token is about to expire: each request refreshes
	nc := natstest.Conn(t, natstest.Server(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	grants, err := OpenGrants(ctx, natstest.JS(t, nc), 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServerConfig{Name: "tracker", URL: as.URL, OAuth: &OAuthConfig{RedirectURL: freeRedirect(t)}}

	// A worker before the login: it needs an authorization.
	early, err := NewClient(cfg, &Options{Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if _, err := early.ListTools(ctx); !errors.Is(err, ErrNeedsAuthorization) || !strings.Contains(err.Error(), "toolctl --config FILE mcp login tracker") {
		t.Fatalf("before the login: %v, want ErrNeedsAuthorization naming the command", err)
	}

	fetch, err := LoopbackAuthorizer(cfg.OAuth.RedirectURL, browser(t))
	if err != nil {
		t.Fatal(err)
	}
	login, err := NewClient(cfg, &Options{Grants: grants, AuthorizationCodeFetcher: fetch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := login.ListTools(ctx); err != nil {
		t.Fatalf("login: %v", err)
	}
	login.Close()
	g, _, err := grants.Load(ctx, "tracker")
	if err != nil || g == nil || g.RefreshToken == "" || g.URL != as.URL || g.ClientID != "client-1" {
		t.Fatalf("stored grant %+v, %v", g, err)
	}

	// Two workers call at once; every call refreshes the shared grant.
	var wg sync.WaitGroup
	for w := range 2 {
		c := early
		if w == 1 {
			if c, err = NewClient(cfg, &Options{Grants: grants}); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		tk := toolkit.New(nil)
		if err := c.Register(ctx, tk); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					final := tk.Dispatch(ctx, toolkit.ToolCall{Name: ToolName("tracker", "whoami")}, toolkit.WriterFuncs{})
					if final.State != toolkit.StateSuccess || final.Text() != "client client-1" {
						t.Errorf("worker %d: %s %s %q", w, final.State, final.Code, final.Text())
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := as.Authorizations.Load(); n != 1 {
		t.Errorf("%d authorizations, want the login's alone", n)
	}
	if n := as.Refreshes.Load(); n < 2 {
		t.Errorf("%d refreshes, want the workers to refresh the expiring token", n)
	}
	if n := as.Reuses.Load(); n != 0 {
		t.Errorf("a spent refresh token was presented %d times: workers refreshed at once", n)
	}

	// Another server's name has no grant: the grant is per server.
	other := cfg
	other.Name = "other"
	c, err := NewClient(other, &Options{Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ListTools(ctx); !errors.Is(err, ErrNeedsAuthorization) {
		t.Errorf("a server without a grant: %v", err)
	}
}

// TestOAuthConfigValidation: oauth is for streamable-http servers and its
// fields are checked.
func TestOAuthConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{Name: "s", Command: "x", OAuth: &OAuthConfig{}}, "OAuth is for streamable-http servers"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", Headers: map[string]string{"authorization": "Bearer x"}, OAuth: &OAuthConfig{}}, "not both"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{ClientSecret: "x"}}, "needs its client_id"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{Grant: GrantClientCredentials, ClientID: "x"}}, "needs client_id and client_secret"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{Grant: "password"}}, `invalid grant "password"`},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{ClientMetadataURL: "http://h/c.json"}}, "not an https URL"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{RedirectURL: "nope"}}, "oauth.redirect_url"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{Scopes: []string{""}}}, "empty scope"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{Grant: GrantEnterprise, ClientID: "c"}}, "needs client_id (at the server's authorization server), idp_issuer and idp_client_id"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{Grant: GrantEnterprise, ClientID: "c", IdPClientID: "i", IdPIssuer: "idp"}}, "oauth.idp_issuer"},
		{ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{IdPIssuer: "https://idp"}}, "are for the enterprise grant"},
	} {
		c := tt.cfg.WithDefaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.cfg.OAuth, err, tt.want)
		}
	}
	ok := ServerConfig{Name: "s", URL: "http://h/mcp", OAuth: &OAuthConfig{Grant: GrantClientCredentials, ClientID: "a", ClientSecret: "b"}}
	if ok = ok.WithDefaults(); ok.Validate() != nil {
		t.Errorf("client credentials: %v", ok.Validate())
	}
}

// TestLoopbackAuthorizerRefusesRemoteRedirects: the code comes back to
// this machine only.
func TestLoopbackAuthorizerRefusesRemoteRedirects(t *testing.T) {
	for _, u := range []string{"https://127.0.0.1:1/cb", "http://example.com:8976/cb", "::"} {
		if _, err := LoopbackAuthorizer(u, func(string) {}); err == nil {
			t.Errorf("%s: no error", u)
		}
	}
}

// loggedIn is a grant store holding a login's grant for cfg's server, and
// the authorization server behind it.
func loggedIn(t *testing.T, ctx context.Context, as *oauthtest.Server, store GrantStore) ServerConfig {
	t.Helper()
	cfg := ServerConfig{Name: "tracker", URL: as.URL, OAuth: &OAuthConfig{RedirectURL: freeRedirect(t)}}
	fetch, err := LoopbackAuthorizer(cfg.OAuth.RedirectURL, browser(t))
	if err != nil {
		t.Fatal(err)
	}
	login, err := NewClient(cfg, &Options{Grants: store, AuthorizationCodeFetcher: fetch})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	if _, err := login.ListTools(ctx); err != nil {
		t.Fatalf("login: %v", err)
	}
	return cfg
}

// callWhoami calls the server's tool through a fresh toolkit.
func callWhoami(ctx context.Context, c *Client) (toolkit.State, string) {
	tk := toolkit.New(nil)
	if err := c.Register(ctx, tk); err != nil {
		return toolkit.StateError, err.Error()
	}
	final := tk.Dispatch(ctx, toolkit.ToolCall{Name: ToolName("tracker", "whoami")}, toolkit.WriterFuncs{})
	return final.State, final.Text()
}

// TestOAuthRefusedTokenIsRefreshed: a token the server refuses while it
// still looks good (revoked) is refreshed with the stored refresh token,
// without asking for a login.
func TestOAuthRefusedTokenIsRefreshed(t *testing.T) {
	as := oauthtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := MemoryGrants()
	cfg := loggedIn(t, ctx, as, store)
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st, text := callWhoami(ctx, w); st != toolkit.StateSuccess {
		t.Fatalf("first call: %s %s", st, text)
	}
	as.RevokeAccessTokens()
	w2, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if st, text := callWhoami(ctx, w2); st != toolkit.StateSuccess {
		t.Fatalf("after the revocation: %s %s", st, text)
	}
	if n := as.Refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if n := as.Authorizations.Load(); n != 1 {
		t.Errorf("%d authorizations, want the login's alone", n)
	}
}

// faultyGrants wraps a store: Save fails for marks (fail), and a hook
// runs after a mark is stored (afterMark).
type faultyGrants struct {
	GrantStore
	failMarks bool
	afterMark func()
	loads     atomic.Int64
	// failStores fails that many saves of refreshed grants.
	failStores atomic.Int64
}

func (f *faultyGrants) Load(ctx context.Context, server string) (*Grant, uint64, error) {
	f.loads.Add(1)
	return f.GrantStore.Load(ctx, server)
}

func (f *faultyGrants) Save(ctx context.Context, server string, g *Grant, rev uint64) (uint64, error) {
	if !g.RefreshingUntil.IsZero() && f.failMarks {
		return 0, errors.New("KV unavailable")
	}
	if g.RefreshingUntil.IsZero() && f.failStores.Add(-1) >= 0 {
		return 0, errors.New("KV unavailable")
	}
	n, err := f.GrantStore.Save(ctx, server, g, rev)
	if err == nil && !g.RefreshingUntil.IsZero() && f.afterMark != nil {
		f.afterMark()
	}
	return n, err
}

// TestOAuthRefreshNeedsItsMark: a worker that cannot mark the grant as
// being refreshed does not refresh (another could spend the same refresh
// token); it sends the token while it has not expired.
func TestOAuthRefreshNeedsItsMark(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(5 * time.Second) // about to expire (oauth2's 10 s), not expired
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := &faultyGrants{GrantStore: MemoryGrants(), failMarks: true}
	cfg := loggedIn(t, ctx, as, store)
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st, text := callWhoami(ctx, w); st != toolkit.StateSuccess {
		t.Fatalf("call: %s %s", st, text)
	}
	if n := as.Refreshes.Load(); n != 0 {
		t.Errorf("%d refreshes without a mark", n)
	}
}

// TestOAuthLogoutStaysLoggedOut: a grant deleted while a worker refreshes
// it is not stored again by that worker.
func TestOAuthLogoutStaysLoggedOut(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inner := MemoryGrants()
	store := &faultyGrants{GrantStore: inner}
	cfg := loggedIn(t, ctx, as, store)
	store.afterMark = func() { _ = inner.Delete(ctx, "tracker") } // toolctl mcp logout, mid-refresh
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, _ = w.ListTools(ctx)
	if g, _, _ := inner.Load(ctx, "tracker"); g != nil {
		t.Errorf("the deleted grant is back: %+v", g)
	}
}

// TestOAuthBadStoredGrant: a stored value that is not a grant is no grant
// (a login replaces it), read once per request, not in a loop.
func TestOAuthBadStoredGrant(t *testing.T) {
	as := oauthtest.Start(t)
	nc := natstest.Conn(t, natstest.Server(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kvg, err := OpenGrants(ctx, natstest.JS(t, nc), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kvg.b.Put(ctx, "tracker", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	store := &faultyGrants{GrantStore: kvg}
	cfg := ServerConfig{Name: "tracker", URL: as.URL, OAuth: &OAuthConfig{RedirectURL: freeRedirect(t)}}
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.ListTools(ctx); !errors.Is(err, ErrNeedsAuthorization) {
		t.Errorf("with an unreadable grant: %v", err)
	}
	if n := store.loads.Load(); n > 10 {
		t.Errorf("%d reads of the store for one connection", n)
	}
	loggedIn(t, ctx, as, store)
	if st, text := callWhoami(ctx, w); st != toolkit.StateSuccess {
		t.Errorf("after a login: %s %s", st, text)
	}
}

// TestOAuthWaitEndsWithTheConnection: waiting for another worker's
// refresh (a mark that never lapses by its writer's clock) gives up with
// the connection's context.
func TestOAuthWaitEndsWithTheConnection(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := MemoryGrants()
	cfg := loggedIn(t, ctx, as, store)
	// A mark by a worker whose clock is a day ahead, and one by a worker
	// whose clock is three minutes behind: both stand for this worker
	// (its own clock decides when a mark lapses).
	for _, until := range []time.Duration{24 * time.Hour, -3 * time.Minute} {
		g, rev, _ := store.Load(ctx, "tracker")
		g.RefreshingUntil = time.Now().Add(until)
		if _, err := store.Save(ctx, "tracker", g, rev); err != nil {
			t.Fatal(err)
		}
		refreshes := as.Refreshes.Load() // the login's
		c, err := NewClient(cfg, &Options{Grants: store})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
		defer stop()
		ts, _ := c.oauth.TokenSource(short)
		start := time.Now()
		_, _ = ts.Token()
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Token waited %v after its connection ended", d)
		}
		if n := as.Refreshes.Load() - refreshes; n != 0 {
			t.Errorf("mark until %v: %d refreshes while another worker's mark stands", until, n)
		}
	}
}

// TestLoopbackAuthorizerWaitsForItsState: an answer for another
// authorization (an old page reloaded) is turned away; the right one is
// taken.
func TestLoopbackAuthorizerWaitsForItsState(t *testing.T) {
	redirect := freeRedirect(t)
	fetch, err := LoopbackAuthorizer(redirect, func(string) {
		go func() {
			for _, q := range []string{"?code=old&state=other", "?code=new&state=s1"} {
				resp, err := http.Get(redirect + q)
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := fetch(ctx, &auth.AuthorizationArgs{URL: "http://as.example/authorize?state=s1"})
	if err != nil || res.Code != "new" || res.State != "s1" {
		t.Errorf("%+v %v", res, err)
	}
}

// TestOAuthRuntimeAuthorizationHeader: a server authorized by OAuth
// refuses a runtime Authorization header, which would override its token.
func TestOAuthRuntimeAuthorizationHeader(t *testing.T) {
	c, err := NewClient(ServerConfig{Name: "s", URL: "http://127.0.0.1:1/mcp", OAuth: &OAuthConfig{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetRuntimeHeaders(map[string]string{"authorization": "Bearer x"}); !errors.Is(err, ErrRuntimeHeaders) {
		t.Errorf("%v", err)
	}
}

// TestEnterpriseLoginStoresTheSignIn: for the enterprise grant, the login
// is an OpenID Connect sign-in at the identity provider whose ID token is
// stored for the workers; a worker without one says to log in.
func TestEnterpriseLoginStoresTheSignIn(t *testing.T) {
	idp := oauthtest.Start(t) // the identity provider (and a server that wants a token)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := MemoryGrants()
	cfg := ServerConfig{Name: "tracker", URL: idp.URL, OAuth: &OAuthConfig{Grant: GrantEnterprise, ClientID: "mcp-client",
		IdPIssuer: idp.Base, IdPClientID: "idp-client", RedirectURL: freeRedirect(t)}}
	if c := cfg.WithDefaults(); c.Validate() != nil {
		t.Fatal(c.Validate())
	}
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.ListTools(ctx); !errors.Is(err, ErrNeedsAuthorization) || !strings.Contains(err.Error(), "mcp login tracker") {
		t.Fatalf("before the sign-in: %v", err)
	}
	fetch, err := LoopbackAuthorizer(cfg.OAuth.RedirectURL, browser(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := EnterpriseLogin(ctx, cfg, store, fetch); err != nil {
		t.Fatal(err)
	}
	g, _, err := store.Load(ctx, "tracker")
	if err != nil || g == nil || g.IDToken == "" || g.URL != idp.URL || idp.IDTokens.Load() != 1 {
		t.Fatalf("stored %+v %v", g, err)
	}
	if exp := jwtExpiry(g.IDToken); time.Until(exp) < 50*time.Minute {
		t.Errorf("the ID token's expiry reads %v", exp)
	}
	if jwtExpiry("not.a.jwt").IsZero() != true || !jwtExpiry("x").IsZero() {
		t.Error("jwtExpiry of garbage")
	}
}

// TestOAuthUnstoredRefreshIsKept: a refreshed grant the store does not
// take (KV down) is kept by the worker and stored at its next request, so
// the refresh token it got is not lost to the fleet.
func TestOAuthUnstoredRefreshIsKept(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inner := MemoryGrants()
	store := &faultyGrants{GrantStore: inner}
	cfg := loggedIn(t, ctx, as, store)
	store.failStores.Store(3) // the refresh's three tries
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st, text := callWhoami(ctx, w); st != toolkit.StateSuccess {
		t.Fatalf("call: %s %s", st, text)
	}
	// Another worker, later: the grant in the store works.
	w2, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if st, text := callWhoami(ctx, w2); st != toolkit.StateSuccess {
		t.Fatalf("the other worker: %s %s", st, text)
	}
	if n := as.Reuses.Load() + as.RefusedRefreshes.Load(); n != 0 {
		t.Errorf("%d refreshes with a spent or unknown refresh token", n)
	}
}

// TestOAuthRefusedRefreshIsNotRepeated: a refresh token the authorization
// server refuses is not tried again on every request: the calls fail
// asking for a login.
func TestOAuthRefusedRefreshIsNotRepeated(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := MemoryGrants()
	cfg := loggedIn(t, ctx, as, store)
	as.RevokeRefreshTokens()
	as.RevokeAccessTokens()
	w, err := NewClient(cfg, &Options{Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 5 {
		if _, err := w.ListTools(ctx); !errors.Is(err, ErrNeedsAuthorization) {
			t.Fatalf("with a refused refresh token: %v", err)
		}
	}
	if n := as.RefusedRefreshes.Load(); n > 1 {
		t.Errorf("the refused refresh token was tried %d times", n)
	}
}
