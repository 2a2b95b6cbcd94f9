package middleware_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// Two caller identities that both name their session "default" must not
// share per-session cache entries: SessionScope keeps them apart everywhere
// else (group state, results).
func TestCachePerSessionKeepsIdentitiesApart(t *testing.T) {
	tk := toolkit.New(nil)
	tk.Use(middleware.Cache{PerSession: true}.Middleware())
	type in struct{}
	err := tk.Add(toolkit.Raw("whoami", "d", nil, func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("secret of " + c.Identity))
	}), toolkit.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "whoami", Session: "default", Identity: "alice"})
	b := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "whoami", Session: "default", Identity: "bob"})
	if a.Text() != "secret of alice" {
		t.Fatalf("alice got %q", a.Text())
	}
	if b.Text() != "secret of bob" {
		t.Errorf("bob got %q from the cache (alice's entry)", b.Text())
	}
}

// A rate limit keyed by session (the worker's default key) must not let one
// identity spend another identity's bucket.
func TestRateLimitBySessionKeepsIdentitiesApart(t *testing.T) {
	tk := toolkit.New(nil)
	tk.Use(middleware.RateLimit{Rate: 0.001, Burst: 1, By: middleware.BySession}.Middleware())
	if err := tk.Add(toolkit.Raw("t", "d", nil, func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ok"))
	})); err != nil {
		t.Fatal(err)
	}
	a := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "t", Session: "default", Identity: "mallory"})
	b := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "t", Session: "default", Identity: "alice"})
	if a.Code != "" {
		t.Fatalf("mallory: %s", a.Code)
	}
	if b.Code != "" {
		t.Errorf("alice's first call: code %s %q (mallory spent her bucket)", b.Code, b.Text())
	}
}
