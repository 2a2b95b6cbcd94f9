// Package oauthtest runs an MCP server behind OAuth 2.1 for tests: the
// protected resource (a go-sdk Streamable HTTP server at /mcp with one
// tool, whoami) and its authorization server in one HTTP server:
// protected resource and authorization server metadata (RFC 9728, RFC
// 8414), dynamic client registration (RFC 7591), an /authorize that
// approves at once (it redirects to the client's redirect URI with a
// code, as a person clicking "allow" would), and /token for codes (PKCE
// S256 checked) and refresh tokens, which it rotates: a refresh token
// works once, and a second use is counted as a reuse (which a strict
// authorization server would take as theft). A code requested with the
// openid scope also brings an ID token (OpenID Connect sign-in).
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is a running protected MCP server and its authorization server.
type Server struct {
	// URL is the MCP endpoint (…/mcp); Base the authorization server's
	// issuer.
	URL, Base string
	// Authorizations counts codes issued, Refreshes tokens refreshed,
	// Reuses refresh tokens presented again after their use.
	Authorizations, Refreshes, Reuses, Registrations, IDTokens, RefusedRefreshes atomic.Int64

	mu       sync.Mutex
	tokenTTL time.Duration
	codes    map[string]code
	access   map[string]string // access token → client id
	refresh  map[string]string // live refresh token → client id
	spent    map[string]bool
}

type code struct{ client, challenge, redirect, scope string }

// Start serves on a loopback port until the test ends. Tokens live an
// hour until SetTokenTTL.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{tokenTTL: time.Hour, codes: map[string]code{}, access: map[string]string{}, refresh: map[string]string{}, spent: map[string]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Base = "http://" + l.Addr().String()
	s.URL = s.Base + "/mcp"
	srv := sdk.NewServer(&sdk.Implementation{Name: "oauth-peer", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Description: "Say which OAuth client called."},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "client " + s.clientOf(req.Extra.Header)}}}, nil, nil
		})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if s.clientOf(r.Header) == "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q`, s.Base+"/.well-known/oauth-protected-resource/mcp"))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"resource": s.URL, "authorization_servers": []string{s.Base}, "scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": s.Base, "authorization_endpoint": s.Base + "/authorize", "token_endpoint": s.Base + "/token",
			"registration_endpoint": s.Base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": []string{"tools", "offline_access"},
		})
	})
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	return s
}

// SetTokenTTL sets the lifetime of access tokens issued from now on
// (expires_in; the server itself does not expire them).
func (s *Server) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenTTL = d
}

// RevokeRefreshTokens makes the server refuse every refresh token issued
// so far (the person must authorize again); refused ones are counted in
// RefusedRefreshes.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
}

// RevokeAccessTokens makes the server refuse every access token issued
// so far (refresh tokens stay good), as after a key rotation.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

func (s *Server) clientOf(h http.Header) string {
	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.access[tok]
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	n := s.Registrations.Add(1)
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": fmt.Sprintf("client-%d", n), "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("client_id") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	c := rand.Text()
	s.mu.Lock()
	s.codes[c] = code{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
	s.mu.Unlock()
	s.Authorizations.Add(1)
	back := redirect.Query()
	back.Set("code", c)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var client, idToken string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.PostForm.Get("redirect_uri") != c.redirect {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		client = c.client
		if slices.Contains(strings.Fields(c.scope), "openid") {
			// An OpenID Connect sign-in: an (unsigned) ID token.
			claims, _ := json.Marshal(map[string]any{"iss": s.Base, "sub": "person@example.com", "aud": client, "exp": time.Now().Add(time.Hour).Unix()})
			idToken = "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + ".sig"
			s.IDTokens.Add(1)
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		if s.spent[rt] {
			s.Reuses.Add(1)
		}
		var ok bool
		if client, ok = s.refresh[rt]; !ok {
			s.RefusedRefreshes.Add(1)
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.refresh, rt)
		s.spent[rt] = true
		s.Refreshes.Add(1)
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
	s.access[at], s.refresh[rt] = client, client
	body := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": int(s.tokenTTL / time.Second)}
	if idToken != "" {
		body["id_token"] = idToken
	}
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
