package mcp

import (
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

// pipeSession serves one MCP session of g on a pair of pipes and connects
// a go-sdk client to it whose reading can be stalled; the client's
// resource updates go to updates (dropped when it is full).
func pipeSession(t *testing.T, g *Gateway, name string, updates chan<- string) (*sdk.ClientSession, *stallingReader) {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	reader := &stallingReader{ReadCloser: toClient, released: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, &sdk.IOTransport{Reader: toServer, Writer: fromServer}, name) }()
	client := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params.URI:
			default:
			}
		},
	})
	// 2025-11-25: a session of that protocol hears of a subscription's
	// updates on its connection (later ones listen for them per request).
	cs, err := client.Connect(natstest.Ctx(t), &sdk.IOTransport{Reader: reader, Writer: fromClient}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		toClient.Close() // a write blocked on the stalled client returns
		cs.Close()
		cancel()
		<-done
	})
	return cs, reader
}

// TestGatewayUpdatesPastAStalledSession: two sessions subscribe to a
// resource; one stops reading, and the other still hears of every update
// published after that (each before the next is published), while the
// stalled one's write waits. Once the stalled client reads again it hears
// of the resource too. A gateway that told its sessions one after another
// would wait on the stalled client's write and tell the other nothing
// more.
func TestGatewayUpdatesPastAStalledSession(t *testing.T) {
	f := mountedFleet(t, ServerConfig{Name: "fixture", Transport: TransportStdio, Command: goSDKEverythingServer(t), ServeResources: true})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	ctx := natstest.Ctx(t)
	stalledUpdates, liveUpdates := make(chan string, 64), make(chan string, 64)
	stalledCS, stalled := pipeSession(t, g, "stalled", stalledUpdates)
	liveCS, _ := pipeSession(t, g, "live", liveUpdates)
	const uri = "test://shared" // the fixture takes subscriptions to any URI
	for _, cs := range []*sdk.ClientSession{stalledCS, liveCS} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	nc := natstest.Connect(t, f.srv)
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
	hear := func(updates <-chan string, who string) {
		t.Helper()
		select {
		case got := <-updates:
			if got != uri {
				t.Fatalf("%s heard of %q, want %q", who, got, uri)
			}
		case <-time.After(guardTimeout):
			t.Fatalf("%s heard of no update within %v", who, guardTimeout)
		}
	}
	publish()
	hear(stalledUpdates, "the client before it stalled")
	hear(liveUpdates, "the live client")

	stalled.stalled.Store(true)
	// The stalled client's reader may be in a Read already, which takes
	// one more message; past that its server's writes wait.
	const more = 4
	for i := range more {
		publish()
		select {
		case <-liveUpdates:
		case <-time.After(guardTimeout):
			t.Fatalf("update %d of %d: the live client heard nothing within %v while another client stalled", i+1, more, guardTimeout)
		}
	}
	close(stalled.released)
	hear(stalledUpdates, "the stalled client once it read again")
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
