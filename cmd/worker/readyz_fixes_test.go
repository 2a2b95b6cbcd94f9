package main_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestReadyzWhenCutOffFromNATS: the worker's link to NATS goes silent (a
// network partition, a half-open TCP connection: nothing is closed). The
// worker can no longer serve: the fleet's calls to it go unanswered. Its
// /readyz must say so within a reasonable time (30s here), not say
// "ready" until the client library's ping timeout (2 × 2 minutes) notices.
// A worker whose NATS link went silent without closing (a partition) kept
// answering /readyz 200 "ready" for minutes while calls to it timed out.
func TestReadyzWhenCutOffFromNATS(t *testing.T) {
	s := natstest.Embedded(t, true)
	p := natstest.ProxyTo(t, s)
	paused := false
	t.Cleanup(func() {
		if paused {
			p.Resume()
		}
	})
	_, _, get := opsEndpoint(t, "--nats", p.URL())
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := c.Invoke(secureCtx(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}}); r.State != toolkit.StateSuccess {
		t.Fatalf("echo before the cut: %+v", r)
	}
	p.Pause()
	paused = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}})
	cancel()
	if r.State == toolkit.StateSuccess {
		t.Fatalf("echo answered through a paused link: %+v", r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/readyz")
		if code == http.StatusServiceUnavailable {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker cannot serve (a call to it ended %s/%s), but 30s after its NATS link went silent /readyz still answers %d %q",
				r.State, r.Code, code, strings.TrimSpace(body))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
