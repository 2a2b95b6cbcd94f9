package mcp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// stallingReader reads its pipe until stall is called; then its next
// Read waits until release: an MCP client that stops reading, whose
// server's writes to it block (an io.Pipe holds nothing).
type stallingReader struct {
	io.ReadCloser
	stalled  atomic.Bool
	released chan struct{}
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if r.stalled.Load() {
		<-r.released
	}
	return r.ReadCloser.Read(p)
}

// pipeClient is a go-sdk client of one gateway session served on a pair
// of pipes (pipeSession), whose reading can be stalled.
type pipeClient struct {
	cs     *sdk.ClientSession
	reader *stallingReader
	// updates are the URIs of the resource updates it heard (dropped when
	// full); acks the subscriptions the gateway acknowledged
	// (notifications/subscriptions/acknowledged, from 2026-07-28).
	updates chan string
	acks    chan sdk.NotificationSubscriptions
	// listChanged has a value for each notifications/tools/list_changed
	// heard (dropped when full).
	listChanged chan struct{}
}

// pipeSession serves one MCP session of g on a pair of pipes and connects
// a go-sdk client to it at the protocol version ("" for the newest the
// go-sdk speaks).
func pipeSession(t *testing.T, g *Gateway, name, version string) *pipeClient {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	pc := &pipeClient{
		reader:      &stallingReader{ReadCloser: toClient, released: make(chan struct{})},
		updates:     make(chan string, 64),
		acks:        make(chan sdk.NotificationSubscriptions, 64),
		listChanged: make(chan struct{}, 64),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, &sdk.IOTransport{Reader: toServer, Writer: fromServer}, name) }()
	client := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case pc.updates <- req.Params.URI:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case pc.listChanged <- struct{}{}:
			default:
			}
		},
	})
	// The go-sdk's client takes the acknowledgement of a subscription
	// without telling anyone: its middleware sees it.
	client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.SubscriptionsAcknowledgedParams); ok && method == "notifications/subscriptions/acknowledged" {
				select {
				case pc.acks <- p.Notifications:
				default:
				}
			}
			return next(ctx, method, req)
		}
	})
	var opts *sdk.ClientSessionOptions
	if version != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(natstest.Ctx(t), &sdk.IOTransport{Reader: pc.reader, Writer: fromClient}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := cmp.Or(version, sdk.SupportedProtocolVersions()[0]); cs.InitializeResult().ProtocolVersion != want {
		t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, want)
	}
	pc.cs = cs
	if cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
		// Connect opens a subscriptions/listen stream for the list changes
		// and returns without awaiting its acknowledgement.
		pc.awaitAck(t, func(n sdk.NotificationSubscriptions) bool { return n.ToolsListChanged })
	}
	t.Cleanup(func() {
		toClient.Close() // a write blocked on the stalled client returns
		cs.Close()
		cancel()
		<-done
	})
	return pc
}

// subscribe subscribes the client to uri, and returns once the gateway has
// the subscription: when resources/subscribe is answered (up to
// 2025-11-25), or, from 2026-07-28, when the subscriptions/listen stream
// that ClientSession.Subscribe opens (and returns without awaiting) is
// acknowledged. An update before that may go unheard.
func (pc *pipeClient) subscribe(t *testing.T, uri string) {
	t.Helper()
	if err := pc.cs.Subscribe(natstest.Ctx(t), &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if pc.cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
		pc.awaitAck(t, func(n sdk.NotificationSubscriptions) bool { return slices.Contains(n.ResourceSubscriptions, uri) })
	}
}

// awaitAck waits for an acknowledgement of a subscriptions/listen stream
// that has what the client wants.
func (pc *pipeClient) awaitAck(t *testing.T, wants func(sdk.NotificationSubscriptions) bool) {
	t.Helper()
	for {
		select {
		case n := <-pc.acks:
			if wants(n) {
				return
			}
		case <-time.After(guardTimeout):
			t.Fatalf("no subscriptions/listen acknowledged within %v", guardTimeout)
		}
	}
}

// hearsTool waits until the client hears notifications/tools/list_changed
// after which its tools/list has the tool.
func (pc *pipeClient) hearsTool(t *testing.T, who, tool string) {
	t.Helper()
	for {
		select {
		case <-pc.listChanged:
		case <-time.After(guardTimeout):
			t.Fatalf("%s heard no list_changed listing %s within %v", who, tool, guardTimeout)
		}
		res, err := pc.cs.ListTools(natstest.Ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(x *sdk.Tool) bool { return x.Name == tool }) {
			return
		}
	}
}

// TestGatewayUpdatesPastAStalledSession: two sessions subscribe to a
// resource; one stops reading, and the other still hears of every update
// published after that (each before the next is published), while the
// stalled one's write waits. Once the stalled client reads again it hears
// of the resource too. A gateway that told its sessions one after another
// would wait on the stalled client's write and tell the other nothing
// more. The same for clients of 2025-11-25 (resources/subscribe, updates
// on the session) and of the newest version (subscriptions/listen, updates
// on the listen's stream).
func TestGatewayUpdatesPastAStalledSession(t *testing.T) {
	f := mountedFleet(t, ServerConfig{Name: "fixture", Transport: TransportStdio, Command: goSDKEverythingServer(t), ServeResources: true})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	nc := natstest.Connect(t, f.srv)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run(cmp.Or(version, "newest"), func(t *testing.T) {
			stalled := pipeSession(t, g, "stalled-"+version, version)
			live := pipeSession(t, g, "live-"+version, version)
			uri := "test://shared/" + version // the fixture takes subscriptions to any URI
			stalled.subscribe(t, uri)
			live.subscribe(t, uri)
			publish := func() {
				t.Helper()
				data, err := wire.Msgpack.Marshal(&wire.MCPUpdate{Server: "fixture", URI: uri})
				if err != nil {
					t.Fatal(err)
				}
				if err := nc.Publish(wire.MCPUpdatedSubject("w-mounted"), data); err != nil {
					t.Fatal(err)
				}
			}
			hear := func(pc *pipeClient, who string) {
				t.Helper()
				select {
				case got := <-pc.updates:
					if got != uri {
						t.Fatalf("%s heard of %q, want %q", who, got, uri)
					}
				case <-time.After(guardTimeout):
					t.Fatalf("%s heard of no update within %v", who, guardTimeout)
				}
			}
			publish()
			hear(stalled, "the client before it stalled")
			hear(live, "the live client")

			stalled.reader.stalled.Store(true)
			// The stalled client's reader may be in a Read already, which
			// takes one more message; past that its server's writes wait.
			const more = 4
			for i := range more {
				publish()
				select {
				case <-live.updates:
				case <-time.After(guardTimeout):
					t.Fatalf("update %d of %d: the live client heard nothing within %v while another client stalled", i+1, more, guardTimeout)
				}
			}
			close(stalled.reader.released)
			hear(stalled, "the stalled client once it read again")
		})
	}
}

// TestGatewayListChangedPastAStalledSession: two sessions; one stops
// reading, and the other still hears notifications/tools/list_changed for
// every change of the fleet after that (each before the next change),
// while the stalled one's write waits; once the stalled client reads again
// it hears of the change too, and lists the new tools. For clients of
// 2025-11-25 and of the newest version.
func TestGatewayListChangedPastAStalledSession(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run(cmp.Or(version, "newest"), func(t *testing.T) {
			stalled := pipeSession(t, g, "stalled-"+version, version)
			live := pipeSession(t, g, "live-"+version, version)
			join := func(i int) string {
				t.Helper()
				name := fmt.Sprintf("joined_%s_%d", cmp.Or(version, "newest"), i)
				tk := newWorkerToolkit(t, f.srv)
				if err := tk.Add(toolkit.Func(name, "A tool of a worker that joined.", func(context.Context, struct{}) (string, error) { return "", nil })); err != nil {
					t.Fatal(err)
				}
				serveWorker(t, f.srv, tk, "w-"+name)
				return name
			}
			first := join(0)
			stalled.hearsTool(t, "the client before it stalled", first)
			live.hearsTool(t, "the live client", first)

			stalled.reader.stalled.Store(true)
			// The stalled client's reader may be in a Read already, which
			// takes one more message; past that its server's writes wait.
			var last string
			for i := 1; i <= 4; i++ {
				last = join(i)
				live.hearsTool(t, fmt.Sprintf("change %d: the live client, while another client stalled,", i), last)
			}
			close(stalled.reader.released)
			stalled.hearsTool(t, "the stalled client once it read again", last)
		})
	}
}

// TestUpdateQueue: a session's queue keeps URIs in order of arrival, each
// once until taken, and drops new ones past its bounds (admitting one of
// any size when empty).
func TestUpdateQueue(t *testing.T) {
	q := newUpdateQueue()
	for _, uri := range []string{"a", "b", "a", "c", "b"} {
		if !q.push(uri) {
			t.Fatalf("push(%q) dropped", uri)
		}
	}
	if got := q.take(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("take = %v, want [a b c]", got)
	}
	if got := q.take(); len(got) != 0 {
		t.Errorf("take after take = %v, want nothing", got)
	}
	for i := range maxSessionUpdates {
		if !q.push(fmt.Sprint("u", i)) {
			t.Fatalf("push %d of %d dropped", i+1, maxSessionUpdates)
		}
	}
	if q.push("one more") {
		t.Errorf("push past %d waiting URIs taken", maxSessionUpdates)
	}
	if !q.push("u0") {
		t.Error("a URI already waiting reported dropped")
	}
	q.take()
	big := strings.Repeat("x", maxSessionUpdateBytes+1)
	if !q.push(big) {
		t.Error("a URI over the byte bound dropped from an empty queue")
	}
	if q.push("small") {
		t.Error("push past the byte bound taken")
	}
}
