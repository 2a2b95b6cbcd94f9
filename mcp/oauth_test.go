package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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

	fetch, closer, err := LoopbackAuthorizer(cfg.OAuth.RedirectURL, browser(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
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
		if _, _, err := LoopbackAuthorizer(u, func(string) {}); err == nil {
			t.Errorf("%s: no error", u)
		}
	}
}
