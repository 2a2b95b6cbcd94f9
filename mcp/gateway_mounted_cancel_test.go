package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// blockingResourceServer is an MCP server (Streamable HTTP, in this
// process) whose resource blk://wait is read until the read is cancelled:
// started is told when a read runs, cancelled when its ctx ends.
func blockingResourceServer(t *testing.T) (url string, started, cancelled chan struct{}) {
	t.Helper()
	started, cancelled = make(chan struct{}, 8), make(chan struct{}, 8)
	srv := sdk.NewServer(&sdk.Implementation{Name: "blocking", Version: "1"}, nil)
	srv.AddResource(&sdk.Resource{URI: "blk://wait", Name: "wait"}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", started, cancelled
}

// TestGatewayMountedRequestCancelled: a resources/read the gateway passes
// on to a mounted server and then gives up on (its client cancelled it,
// or ended its session, or the gateway closed) is cancelled on the worker:
// the server's read sees its ctx end, well before the worker's own 30 s
// bound on the request.
func TestGatewayMountedRequestCancelled(t *testing.T) {
	for _, how := range []string{"client cancel", "session delete", "gateway close"} {
		t.Run(how, func(t *testing.T) {
			srvURL, started, cancelled := blockingResourceServer(t)
			f := mountedFleet(t, ServerConfig{Name: "blk", Transport: TransportStreamableHTTP, URL: srvURL, ServeResources: true})
			g, err := NewGateway(natstest.Ctx(t), natstest.Connect(t, f.srv), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close() })
			waitMounted(t, g, "w-mounted")
			url := serveGatewayHTTP(t, g)
			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1})
			waitTracked(t, g, 1)
			// The worker ends the request by itself at its own 30 s bound:
			// the cancels sent to it tell a cancel from that.
			sent := make(chan struct{}, 8)
			snc := natstest.Connect(t, f.srv)
			_, err = snc.Subscribe(wire.MCPSubject("w-mounted"), func(m *nats.Msg) {
				var req wire.MCPRequest
				if wire.CodecOf(m.Header).Unmarshal(m.Data, &req) == nil && req.Method == wire.MCPCancelled && req.Server == "blk" {
					sent <- struct{}{}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := snc.Flush(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(natstest.Ctx(t))
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "blk://wait"})
				done <- err
			}()
			select {
			case <-started:
			case <-time.After(guardTimeout):
				t.Fatal("the mounted server's read never started")
			}
			switch how {
			case "client cancel":
				cancel() // the go-sdk client sends notifications/cancelled
			case "session delete":
				go func() {
					req, _ := http.NewRequest(http.MethodDelete, url, nil)
					req.Header.Set("Mcp-Session-Id", c.cs.ID())
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}()
			case "gateway close":
				go g.Close()
			}
			select {
			case <-cancelled:
			case <-time.After(2 * guardTimeout):
				t.Fatalf("%s: %v later the mounted server's read still runs", how, 2*guardTimeout)
			}
			select {
			case <-sent:
			case <-time.After(guardTimeout):
				t.Fatalf("%s: the mounted server's read ended, but no cancel was sent to the worker (its own bound ended the read)", how)
			}
			cancel()
			<-done
		})
	}
}

// A cancel sent as a NATS request (with a reply subject: `nats req`, or a
// peer forwarding cancels with Request) was taken and never answered, so
// its sender waited out its own timeout and took the cancel for lost. It
// is taken and answered {} at once; the request it cancels ends, by the
// cancel: answered "context canceled", not by the worker's own bound on
// the request, which a cancel that never reached it would wait for.
func TestMountedCancelWithReplyAnswered(t *testing.T) {
	srvURL, started, cancelled := blockingResourceServer(t)
	f := mountedFleet(t, ServerConfig{Name: "blk", Transport: TransportStreamableHTTP, URL: srvURL, ServeResources: true})
	nc := natstest.Connect(t, f.srv)
	read, err := wire.Msgpack.Marshal(&wire.MCPRequest{Server: "blk", Method: MethodReadResource, Params: map[string]any{"uri": "blk://wait"}, ID: "read-1"})
	if err != nil {
		t.Fatal(err)
	}
	readDone := make(chan *nats.Msg, 1)
	go func() {
		// Longer than the worker's own bound, which then answers it.
		m, _ := nc.Request(wire.MCPSubject("w-mounted"), read, 2*guardTimeout)
		readDone <- m
	}()
	select {
	case <-started:
	case <-time.After(guardTimeout):
		t.Fatal("the mounted server's read never started")
	}
	m, err := nc.RequestMsg(&nats.Msg{Subject: wire.MCPSubject("w-mounted"), Header: nats.Header{"Content-Type": {"application/json"}},
		Data: []byte(`{"server":"blk","method":"notifications/cancelled","params":{"requestId":"read-1"}}`)}, guardTimeout)
	if err != nil {
		t.Fatalf("a cancel sent as a request: %v", err)
	}
	if string(m.Data) != "{}" {
		t.Errorf("the answer to a cancel sent as a request: %q, want {}", m.Data)
	}
	select {
	case <-cancelled: // by the cancel, or the worker's bound (below)
	case <-time.After(2 * guardTimeout):
		t.Fatalf("%v later the mounted server's read still runs", 2*guardTimeout)
	}
	m = <-readDone
	if m == nil {
		t.Fatal("the cancelled read was not answered")
	}
	var reply wire.MCPReply
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &reply); err != nil {
		t.Fatalf("the answer to the cancelled read: %v", err)
	}
	// The worker ends the read by itself at its own 30 s bound
	// (mountedTimeout) too, which also cancels the server's read: its
	// answer then says the deadline passed. Only the cancel ends it so.
	if !strings.Contains(reply.Error, context.Canceled.Error()) {
		t.Fatalf("the read ended %q, not %q: not by the cancel (the worker's own bound on the request ends it %q)", reply.Error, context.Canceled.Error(), context.DeadlineExceeded.Error())
	}
}
