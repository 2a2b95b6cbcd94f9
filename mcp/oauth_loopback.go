package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// LoopbackAuthorizer returns an AuthorizationCodeFetcher for a person at
// this machine: for each authorization it listens on redirectURL (an http
// URL on a loopback address), calls show with the authorization URL to
// open in a browser, and returns the code the browser brings back to
// redirectURL for that authorization (its state); anything else arriving
// there is turned away. One authorization runs at a time.
func LoopbackAuthorizer(redirectURL string, show func(authURL string)) (auth.AuthorizationCodeFetcher, error) {
	u, err := url.Parse(redirectURL)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("mcp: the redirect URL %q must be an http URL on this machine to receive the code", redirectURL)
	}
	if !loopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("mcp: the redirect URL %q must be on a loopback address (127.0.0.1, [::1] or localhost) to receive the code here", redirectURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	path := cmpPath(u.Path)
	var mu sync.Mutex
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		mu.Lock()
		defer mu.Unlock()
		au, err := url.Parse(args.URL)
		if err != nil {
			return nil, fmt.Errorf("the authorization URL: %w", err)
		}
		state := au.Query().Get("state")
		ln, err := net.Listen("tcp", host)
		if err != nil {
			return nil, fmt.Errorf("listening for the authorization code at %s: %w", redirectURL, err)
		}
		type answer struct {
			res *auth.AuthorizationResult
			err error
		}
		answers := make(chan answer, 1)
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if cmpPath(r.URL.Path) != path || q.Get("state") != state {
				http.Error(w, "This is not the authorization toolbus is waiting for (an old page?).", http.StatusBadRequest)
				return
			}
			a := answer{res: &auth.AuthorizationResult{Code: q.Get("code"), State: state, Iss: q.Get("iss")}}
			switch {
			case q.Get("error") != "":
				a.err = fmt.Errorf("the authorization server said %s: %s", q.Get("error"), q.Get("error_description"))
				http.Error(w, "Authorization failed: "+q.Get("error")+" "+q.Get("error_description"), http.StatusBadRequest)
			case a.res.Code == "":
				a.err = errors.New("the browser came back without a code")
				http.Error(w, "Authorization failed: no code.", http.StatusBadRequest)
			default:
				fmt.Fprintln(w, "toolbus received the authorization; the login finishes in the terminal. You can close this page.")
			}
			select {
			case answers <- a:
			default:
			}
		})}
		go func() { _ = srv.Serve(ln) }()
		defer func() { // let the browser have its page
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		show(args.URL)
		select {
		case a := <-answers:
			return a.res, a.err
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the browser to come back to %s: %w", redirectURL, ctx.Err())
		}
	}, nil
}

// loopbackHost: localhost or a loopback address.
func loopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

func cmpPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
