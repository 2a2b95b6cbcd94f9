package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// heldServer is a go-sdk MCP server over HTTP, mounted by a worker with
// its resources: its resource held://r and its prompt "held" answer only
// once release is closed, counting the requests that reach it and wait
// (held); fast://r and the tool echo answer at once. lists counts the
// resources/list requests it gets.
type heldServer struct {
	url     string
	release chan struct{}
	open    sync.Once
	held    atomic.Int64
	lists   atomic.Int64
}

// let answers the held requests, and those to come at once.
func (h *heldServer) let() { h.open.Do(func() { close(h.release) }) }

func startHeldServer(t *testing.T) *heldServer {
	t.Helper()
	h := &heldServer{release: make(chan struct{})}
	srv := newTestServer(&sdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(context.Context, *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{"x"}}}, nil
		},
	})
	wait := func(ctx context.Context) error {
		h.held.Add(1)
		select {
		case <-h.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	srv.AddResource(&sdk.Resource{URI: "held://r", Name: "held"}, func(ctx context.Context, _ *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		if err := wait(ctx); err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "held://r", Text: "held"}}}, nil
	})
	srv.AddResource(&sdk.Resource{URI: "fast://r", Name: "fast"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "fast://r", Text: "fast"}}}, nil
	})
	srv.AddPrompt(&sdk.Prompt{Name: "held", Arguments: []*sdk.PromptArgument{{Name: "a"}}}, func(ctx context.Context, _ *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		if err := wait(ctx); err != nil {
			return nil, err
		}
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "held"}}}}, nil
	})
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == MethodListResources {
				h.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(h.let) // first: Close waits for the held requests
	h.url = hs.URL
	return h
}

// heldGateway is a gateway over a worker mounting a heldServer named
// "held", served over HTTP, with opts.
func heldGateway(t *testing.T, h *heldServer, opts *GatewayOptions) string {
	t.Helper()
	f := mountedFleet(t, ServerConfig{Name: "held", Transport: TransportStreamableHTTP, URL: h.url, ServeResources: true})
	g, err := NewGateway(natstest.Ctx(t), natstest.Connect(t, f.srv), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	waitMounted(t, g, "w-mounted")
	return serveGatewayHTTP(t, g)
}

// TestGatewaySessionRequestsBounded: only tools/call was bounded per
// session; a client flooding the gateway with resources/read and
// prompts/get sent every one to the fleet at once. Those requests, and the
// session's other requests that reach the fleet, count toward the same
// GatewayOptions.MaxSessionCalls as its calls: past it a request is
// refused at once with the TooManyCallsError its calls get, reaching no
// worker; another session is not affected, and the session is served again
// once its requests ended.
func TestGatewaySessionRequestsBounded(t *testing.T) {
	h := startHeldServer(t)
	url := heldGateway(t, h, &GatewayOptions{MaxSessionCalls: 2})
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	other := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	ctx := natstest.Ctx(t)

	const flood = 12
	var wg sync.WaitGroup
	var refused, served atomic.Int64
	errs := make(chan error, flood)
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "held://r"})
			} else {
				_, err = c.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: ToolName("held", "held")})
			}
			switch {
			case err == nil:
				served.Add(1)
			case strings.Contains(err.Error(), "TooManyCallsError"):
				refused.Add(1)
			default:
				errs <- err
			}
		}()
	}
	natstest.WaitFor(t, "the flood to be held or refused", func() bool {
		return h.held.Load() > 2 || h.held.Load()+refused.Load() == flood || len(errs) > 0
	})
	if n := h.held.Load(); n > 2 {
		t.Fatalf("%d of %d requests of one session bounded at 2 reached the server at once", n, flood)
	}
	if len(errs) > 0 {
		t.Fatalf("a request past the bound: %v; want TooManyCallsError", <-errs)
	}
	if n := refused.Load(); n != flood-2 {
		t.Fatalf("%d requests refused, want %d", n, flood-2)
	}

	// The session's other kinds of requests, and its calls, are refused
	// while two requests are in progress.
	_, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "fast://r"})
	if err == nil || !strings.Contains(err.Error(), "TooManyCallsError") || !strings.Contains(err.Error(), "runs 2 requests") {
		t.Fatalf("a read past the bound: %v; want TooManyCallsError naming the bound", err)
	}
	if _, err := c.cs.ListResources(ctx, nil); err == nil || !strings.Contains(err.Error(), "TooManyCallsError") {
		t.Fatalf("resources/list past the bound: %v", err)
	}
	if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "fast://r"}); err == nil || !strings.Contains(err.Error(), "TooManyCallsError") {
		t.Fatalf("resources/subscribe past the bound: %v", err)
	}
	if _, err := c.cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: ToolName("held", "held")},
		Argument: sdk.CompleteParamsArgument{Name: "a", Value: ""}}); err == nil || !strings.Contains(err.Error(), "TooManyCallsError") {
		t.Fatalf("completion/complete past the bound: %v", err)
	}
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolName("held", "echo"), Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), "TooManyCallsError") {
		t.Fatalf("a call past the bound: %+v %q", res, resultText(res))
	}
	if r, err := other.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "fast://r"}); err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "fast" {
		t.Fatalf("another session's read: %+v %v", r, err)
	}

	h.let()
	wg.Wait()
	if n := served.Load(); n != 2 {
		t.Fatalf("%d held requests served once released, want 2", n)
	}
	if r, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "fast://r"}); err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "fast" {
		t.Fatalf("the session's read once its requests ended: %+v %v", r, err)
	}
	if res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolName("held", "echo"), Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
		t.Fatalf("the session's call once its requests ended: %+v %v", res, err)
	}
}

// TestGatewayResubscribeHeldAsksNothing: a resources/subscribe to a URI
// the session holds is answered at once; it listed every subscribing
// server's resources and subscribed again each time, so a client repeating
// one subscribe kept the workers and servers listing. After an
// unsubscribe, a subscribe asks again.
func TestGatewayResubscribeHeldAsksNothing(t *testing.T) {
	h := startHeldServer(t)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: heldGateway(t, h, nil)})
	ctx := natstest.Ctx(t)
	if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "fast://r"}); err != nil {
		t.Fatal(err)
	}
	first := h.lists.Load()
	if first == 0 {
		t.Fatal("the first subscribe listed nothing")
	}
	for range 5 {
		if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "fast://r"}); err != nil {
			t.Fatalf("subscribing again to a URI held: %v", err)
		}
	}
	if n := h.lists.Load(); n != first {
		t.Fatalf("5 subscribes again to a URI held listed the server's resources %d times more", n-first)
	}
	if err := c.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "fast://r"}); err != nil {
		t.Fatal(err)
	}
	if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "fast://r"}); err != nil {
		t.Fatal(err)
	}
	if n := h.lists.Load(); n == first {
		t.Fatal("a subscribe after an unsubscribe asked nothing")
	}
}

// TestGatewayCloseEndsHeldRequests: a resources/read waiting for a mounted
// server is ended when the gateway closes, as calls are; Close waited for
// it (the go-sdk closes a session only once its requests returned) for
// the whole bound of a mounted request, 35 s.
func TestGatewayCloseEndsHeldRequests(t *testing.T) {
	h := startHeldServer(t)
	defer h.let() // before the cleanups: the worker still waits for the server
	f := mountedFleet(t, ServerConfig{Name: "held", Transport: TransportStreamableHTTP, URL: h.url, ServeResources: true})
	g, err := NewGateway(natstest.Ctx(t), natstest.Connect(t, f.srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	waitMounted(t, g, "w-mounted")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	read := make(chan error, 1)
	go func() {
		_, err := c.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "held://r"})
		read <- err
	}()
	natstest.WaitFor(t, "the read to reach the server", func() bool { return h.held.Load() == 1 })
	closed := make(chan struct{})
	go func() {
		g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(mountedTimeout / 2):
		t.Fatalf("Close did not return in %v with a resources/read waiting for a mounted server", mountedTimeout/2)
	}
	if err := <-read; err == nil {
		t.Fatal("the read waiting when the gateway closed succeeded")
	}
}
