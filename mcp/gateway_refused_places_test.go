package mcp

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// refusedGateway starts a fleet, a gateway over it with the two bounds,
// and two client sessions, a and b. The gateway's OnCall holds the first
// call answered overloaded until release, having closed held: the
// gateway is then answering a refused request, which takes no place.
// release may be called more than once; the test's end calls it too.
func refusedGateway(t *testing.T, maxSessionCalls, maxCalls int) (f *fleetFixture, a, b *mcpClient, held <-chan struct{}, release func()) {
	h, r := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(r) }) }
	t.Cleanup(release)
	var first atomic.Bool // not a sync.Once: a later call must not wait for the first
	onCall := func(_ string, _ toolkit.State, code toolkit.Code, _ time.Duration) {
		if code == toolkit.CodeOverloaded && first.CompareAndSwap(false, true) {
			close(h)
			<-r
		}
	}
	f = startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxSessionCalls: maxSessionCalls, MaxCalls: maxCalls, OnCall: onCall})
	url := serveGatewayHTTP(t, g)
	a = connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	b = connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	waitTracked(t, g, 2)
	return f, a, b, h, release
}

// A request refused at its session's bound took a place under the
// gateway's MaxCalls until it was answered (and the reverse): with a
// session bound of 1 and MaxCalls of 2, one session running a call and
// being refused another left no room for a second session's call, which
// fits.
func TestGatewaySessionRefusedTakesNoGatewayPlace(t *testing.T) {
	f, a, b, held, release := refusedGateway(t, 1, 2)
	ctx := natstest.Ctx(t)

	unblockA, outA := startSlow(t, f, a)
	defer unblockA()
	refused := make(chan callOutcome, 1)
	go func() {
		res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		refused <- callOutcome{res, err}
	}()
	select {
	case <-held:
	case <-time.After(guardTimeout):
		t.Fatal("a's second call was never answered overloaded")
	}

	outB := make(chan callOutcome, 1)
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	go func() {
		res, err := b.cs.CallTool(bctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		outB <- callOutcome{res, err}
	}()
	select {
	case <-f.started: // admitted: 2 calls run, the gateway's bound
	case o := <-outB:
		t.Fatalf("b's call, with one call running in the gateway bounded at 2, was not run: %v %q", o.err, textOf(o.res))
	case <-time.After(guardTimeout):
		t.Fatal("b's call neither ran nor was answered")
	}
	release()
	if o := <-refused; o.err != nil || !o.res.IsError || !strings.Contains(resultText(o.res), "this session already runs 1 requests") {
		t.Fatalf("a's second call: %v %q", o.err, textOf(o.res))
	}
	unblockA()
	<-outA
	cancelB()
	<-outB
}

// The reverse: a request refused at the gateway's bound took a place
// under its session's until it was answered: with both bounds at 1, once
// the other session's call ended, the session's next call was refused as
// if it ran one already.
func TestGatewayRefusedTakesNoSessionPlace(t *testing.T) {
	f, a, b, held, release := refusedGateway(t, 1, 1)
	ctx := natstest.Ctx(t)

	unblockB, outB := startSlow(t, f, b)
	defer unblockB()
	refused := make(chan callOutcome, 1)
	go func() {
		res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		refused <- callOutcome{res, err}
	}()
	select {
	case <-held:
	case <-time.After(guardTimeout):
		t.Fatal("a's call was never answered overloaded")
	}
	unblockB()
	<-outB

	res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || resultText(res) != "hi" {
		t.Fatalf("a's call with no call running: %v %q", err, textOf(res))
	}
	release()
	if o := <-refused; o.err != nil || !o.res.IsError || !strings.Contains(resultText(o.res), "the gateway already runs 1 requests") {
		t.Fatalf("a's first call: %v %q", o.err, textOf(o.res))
	}
}

// textOf is res's text, "" for no result (a call that failed).
func textOf(res *sdk.CallToolResult) string {
	if res == nil {
		return ""
	}
	return resultText(res)
}
