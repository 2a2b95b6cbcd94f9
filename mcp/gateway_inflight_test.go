package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// callOutcome is what a client's CallTool returned.
type callOutcome struct {
	res *sdk.CallToolResult
	err error
}

// startSlow starts "slow" from c and waits until the worker runs it. The
// returned unblock cancels the call on the bus itself (as toolctl cancel
// does), so a gateway that never cancels it does not hang the test run;
// outcome gets what the client's CallTool returns.
func startSlow(t *testing.T, f *fleetFixture, c *mcpClient) (unblock func(), outcome <-chan callOutcome) {
	t.Helper()
	nc := natstest.Connect(t, f.srv)
	sub, err := nc.SubscribeSync("tools.call.slow")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	out := make(chan callOutcome, 1)
	go func() {
		res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		out <- callOutcome{res, err}
	}()
	m, err := sub.NextMsg(guardTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var req wire.Request
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.started:
	case <-time.After(guardTimeout):
		t.Fatal("slow never started")
	}
	return func() {
		nc.PublishMsg(&nats.Msg{Subject: wire.CancelSubject("", req.ID), Header: nats.Header{wire.HeaderVersion: {wire.Version}}})
		nc.Flush()
	}, out
}

func waitCancelled(t *testing.T, f *fleetFixture, within time.Duration, what string) bool {
	t.Helper()
	select {
	case err := <-f.cancelled:
		// The worker ends a call on its own once its caller's reply
		// subject is gone (toolkit.ErrCallerGone): that is no cancel.
		if cause := f.lastCause(); errors.Is(cause, toolkit.ErrCallerGone) {
			t.Errorf("%s: the worker's call ended only as its caller was gone (%v): no cancel reached it", what, cause)
			return true
		}
		t.Logf("the worker saw %v (%v)", err, f.lastCause())
		return true
	case <-time.After(within):
		t.Errorf("%s: %v later the worker's call is still running (no cancel reached it)", what, within)
		return false
	}
}

func waitTracked(t *testing.T, g *Gateway, n int) {
	t.Helper()
	for deadline := time.Now().Add(guardTimeout); g.Sessions() != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions tracked, want %d", g.Sessions(), n)
		}
	}
}

// TestGatewayCloseInFlight: Close with a tools/call in flight must
// end the call (the worker sees a cancel) and return.
func TestGatewayCloseInFlight(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	waitTracked(t, g, 1)
	unblock, _ := startSlow(t, f, c)
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case <-closed:
	case <-time.After(guardTimeout):
		t.Errorf("Gateway.Close has not returned %v after it was called with a call in flight", guardTimeout)
	}
	if !waitCancelled(t, f, guardTimeout, "after Gateway.Close") {
		unblock() // the MCP client's cancel: lets Close return so the test ends
		<-closed
	}
}

// TestGatewayDeleteInFlight: an MCP session ended by the client
// (DELETE) while a call runs: the call must be cancelled on the worker,
// the DELETE answered and the session forgotten.
func TestGatewayDeleteInFlight(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	url := serveGatewayHTTP(t, g)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	waitTracked(t, g, 1)
	unblock, _ := startSlow(t, f, c)
	t.Cleanup(unblock)

	deleted := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodDelete, url, nil)
		req.Header.Set("Mcp-Session-Id", c.cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			deleted <- -1
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	select {
	case code := <-deleted:
		t.Logf("DELETE: %d", code)
	case <-time.After(guardTimeout):
		t.Errorf("the DELETE of the session is unanswered %v later", guardTimeout)
	}
	waitCancelled(t, f, guardTimeout, "after the session's DELETE")
	// The session is let go once its call has returned, which on a busy
	// machine may be a moment after the worker saw the cancel.
	waitTracked(t, g, 0)
	unblock()
}

// cutConns is a dialer whose connections the test can cut (a client that
// dies: its TCP connections close, nothing more is sent).
type cutConns struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool // die: no connection is made any more
}

func (d *cutConns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	dead := d.dead
	d.mu.Unlock()
	if dead {
		return nil, errors.New("the client is gone")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

// die cuts the connections and makes no more (a client that died: its
// session's DELETE never comes).
func (d *cutConns) die() {
	d.mu.Lock()
	d.dead = true
	d.mu.Unlock()
	d.cut()
}

func (d *cutConns) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
}

// slowCallOverCuttable starts a gateway with opts on f's server and a
// client of it over HTTP connections the returned cutConns cuts, and
// returns once the client's call of slow runs on the worker (unblocked
// when the test ends).
func slowCallOverCuttable(t *testing.T, f *fleetFixture, opts *GatewayOptions) (*Gateway, *cutConns) {
	t.Helper()
	g := startGateway(t, f.srv, opts)
	d := &cutConns{}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.dial}}
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g), HTTPClient: hc, MaxRetries: -1})
	waitTracked(t, g, 1)
	unblock, _ := startSlow(t, f, c)
	t.Cleanup(unblock)
	return g, d
}

// TestGatewayClientGoneInFlight: an MCP client that dies mid-call (its
// connections close; no cancel, no DELETE): once its session has been
// idle for the session timeout, the call is cancelled on the worker and
// the session forgotten.
func TestGatewayClientGoneInFlight(t *testing.T) {
	f := startFleet(t)
	g, d := slowCallOverCuttable(t, f, &GatewayOptions{SessionTimeout: 500 * time.Millisecond})
	d.cut()
	waitCancelled(t, f, guardTimeout, "client gone, session timeout 500ms")
	waitTracked(t, g, 0) // the go-sdk's idle close, no longer waiting on the call
}

// TestGatewayServeListenerEndInFlight: when ServeListener's ctx ends, the
// calls of the sessions it opened are cancelled on the worker, and their
// clients get the interrupted results (a stream closed without one loses
// the call).
func TestGatewayServeListenerEndInFlight(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + "/mcp", MaxRetries: -1})
	waitTracked(t, g, 1)
	unblock, outcome := startSlow(t, f, c)
	t.Cleanup(unblock)
	cancel()
	waitCancelled(t, f, guardTimeout, "after ServeListener's ctx ended")
	select {
	case o := <-outcome:
		if o.err != nil || !o.res.IsError || len(o.res.Content) != 1 || o.res.Content[0].(*sdk.TextContent).Text != GatewayStoppedText {
			t.Errorf("the client got %+v, %v; want the interrupted result", o.res, o.err)
		}
	case <-time.After(guardTimeout):
		t.Error("the client got nothing for its call")
	}
	<-done
}

// TestGatewayListChangedStale: a client that lists its tools when told
// notifications/tools/list_changed (what the notification is for) gets the
// new list: the gateway stores the list tools/list answers before it
// changes the go-sdk server's tools (whose change sends the notification
// 10ms later), however long building the list takes (200 large tools).
func TestGatewayListChangedStale(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), MaxPayload: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	if err := tk.AddGroup(toolkit.Group{Name: "extra", Description: "Extra tools."}); err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ok"))
	}
	long := strings.Repeat("A long parameter description. ", 200) // ~6 KB per tool
	for i := range 200 {
		schema := map[string]any{"type": "object", "properties": map[string]any{
			"p": map[string]any{"type": "string", "description": long}}}
		if err := tk.Add(toolkit.Raw(fmt.Sprintf("tool%03d", i), "A tool.", schema, run)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tk.Add(toolkit.Raw("extra_tool", "In group extra.", map[string]any{"type": "object", "properties": map[string]any{}}, run), toolkit.InGroup("extra")); err != nil {
		t.Fatal(err)
	}
	serveWorker(t, srv, tk, "w1")
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, srv, nil)
	url := serveGatewayHTTP(t, g)
	ctx, cancel = context.WithTimeout(context.Background(), 4*guardTimeout) // the rounds take their time
	defer cancel()
	for deadline := time.Now().Add(guardTimeout); len(g.Fleet().Tools()) < 201; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway knows %d tools", len(g.Fleet().Tools()))
		}
	}

	lists := make(chan []string, 64)
	var cs *sdk.ClientSession
	var ready = make(chan struct{})
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			go func() {
				<-ready
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Logf("tools/list after list_changed: %v", err)
					return
				}
				var names []string
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
				}
				lists <- names
			}()
		},
	})
	cs, err = client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	t.Cleanup(func() { cs.Close() })
	waitTracked(t, g, 1)
	if res, err := cs.ListTools(ctx, nil); err == nil {
		t.Logf("initially %d tools", len(res.Tools))
	} else {
		t.Log(err)
	}

	for round := range 2 {
		for _, on := range []bool{true, false} {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "reset_tools", Arguments: map[string]any{"extra": on}})
			if err != nil || res.IsError {
				t.Fatalf("reset_tools %v: %v %+v", on, err, res)
			}
			// Every notification told and listed: the last list the client
			// made on one has extra_tool as reset_tools left it. A stale
			// one with no notification after it never does (a tools/list
			// of 200 large tools takes a while on a busy machine).
			var last []string
			n := 0
			for deadline := time.After(guardTimeout); n == 0 || slices.Contains(last, "extra_tool") != on; {
				select {
				case last = <-lists:
					n++
					continue
				case <-deadline:
				}
				if n == 0 {
					t.Fatalf("round %d: no list_changed after reset_tools extra=%v", round, on)
				}
				now, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Fatalf("round %d: after reset_tools extra=%v, the tools/list the client sent on the last of %d list_changed notifications has extra_tool=%v: stale, and no notification follows (a tools/list now has extra_tool=%v)",
					round, on, n, !on, slices.ContainsFunc(now.Tools, func(tl *sdk.Tool) bool { return tl.Name == "extra_tool" }))
			}
		}
	}
}

// TestGatewayCutPostInFlight: a call whose POST's connection is cut while
// its result cannot reach the client any other way (no StreamBuffer, so
// no resumption with Last-Event-ID) is cancelled on the worker at once,
// not when its session has been idle for the session timeout (30
// minutes by default), or never while the client's event stream stays.
func TestGatewayCutPostInFlight(t *testing.T) {
	f := startFleet(t)
	_, d := slowCallOverCuttable(t, f, &GatewayOptions{StreamBuffer: -1})
	d.die()
	waitCancelled(t, f, guardTimeout, "the call's POST cut, no stream to resume")
}

// TestGatewayBoundsEndInFlight: a call the gateway's own bounds end, its
// CallTimeout or Interrupt, is cancelled on the worker.
func TestGatewayBoundsEndInFlight(t *testing.T) {
	for _, how := range []string{"call timeout", "interrupt"} {
		t.Run(how, func(t *testing.T) {
			f := startFleet(t)
			o := &GatewayOptions{}
			if how == "call timeout" {
				o.CallTimeout = 5 * time.Second // the call starts well within it
			}
			g := startGateway(t, f.srv, o)
			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
			waitTracked(t, g, 1)
			unblock, _ := startSlow(t, f, c)
			t.Cleanup(unblock)
			if how == "interrupt" {
				g.Interrupt()
			}
			waitCancelled(t, f, guardTimeout, how)
		})
	}
}
