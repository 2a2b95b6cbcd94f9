package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// listedScopes is a bus.ListFilter that records the session scopes whose
// tools the gateway listed, and lists every tool.
type listedScopes struct {
	mu     sync.Mutex
	scopes []string
}

func (l *listedScopes) filter(_ context.Context, _ *discovery.Fleet, scope string, schemas []toolkit.FunctionSchema) ([]toolkit.FunctionSchema, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.scopes, scope) {
		l.scopes = append(l.scopes, scope)
	}
	return schemas, nil
}

func (l *listedScopes) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.scopes)
}

// A go-sdk client connects with a server/discover probe first, which a
// stateful Streamable HTTP server cannot serve (the go-sdk answers it with
// the legacy protocol versions only, and the client initializes). The
// gateway built a whole session for the probe, listing the tools of a
// session no client ever saw and reading its instructions, and counted it
// toward MaxSessions until it closed a moment later. A connect now lists
// one session, the one the client gets, and takes one of MaxSessions; the
// client still gets what a client that sends no probe gets.
func TestGatewayDiscoverProbe(t *testing.T) {
	f := startFleet(t)
	listed := &listedScopes{}
	g := startGateway(t, f.srv, &GatewayOptions{
		MaxSessions:  1,
		Instructions: "Call echo to hear your text back.",
		Client:       &bus.ClientOptions{Filter: listed.filter},
	})
	u := serveGatewayHTTP(t, g)

	probing := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u})
	if got, want := listed.get(), []string{toolkit.SessionScope(g.copts.Identity, probing.cs.ID())}; !slices.Equal(got, want) {
		t.Errorf("a connect listed the tools of sessions %q, want only its own %q", got, want)
	}
	probed := probing.cs.InitializeResult()
	probedTools := listNames(t, probing)
	probing.cs.Close()
	natstest.WaitFor(t, "the session to end", func() bool { return g.Sessions() == 0 })

	// A client pinned to 2025-11-25 sends no probe.
	client := sdk.NewClient(&sdk.Implementation{Name: "gateway-test", Version: "1"}, nil)
	cs, err := client.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: u}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	direct := cs.InitializeResult()
	if probed.ProtocolVersion != direct.ProtocolVersion || probed.Instructions != direct.Instructions ||
		!reflect.DeepEqual(probed.Capabilities, direct.Capabilities) || !reflect.DeepEqual(probed.ServerInfo, direct.ServerInfo) {
		t.Errorf("after a probe the client initialized with\n%+v\nwithout one with\n%+v", probed, direct)
	}
	directTools := listNames(t, &mcpClient{cs: cs})
	if !reflect.DeepEqual(sortedKeys(probedTools), sortedKeys(directTools)) {
		t.Errorf("after a probe the client lists %v, without one %v", sortedKeys(probedTools), sortedKeys(directTools))
	}
}

// postMCP posts one JSON-RPC message to the gateway at u as a client of
// protocol version sends it (with method in Mcp-Method), and returns the
// status, the Mcp-Session-Id and the JSON-RPC message of the answer
// (from its event stream, or its JSON body).
func postMCP(t *testing.T, u, version, method, body string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", method)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var msg map[string]any
	for line := range strings.Lines(string(b)) {
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &msg) == nil {
			break
		}
	}
	if msg == nil {
		json.Unmarshal(b, &msg)
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), msg
}

// A discover probe is answered, with the versions the gateway serves over
// HTTP and the capabilities a session has, while the gateway has all
// the sessions it takes; it opens no session and lists nothing. A
// request that only says it is a discover opens no session either.
func TestGatewayDiscoverAnswer(t *testing.T) {
	f := startFleet(t)
	listed := &listedScopes{}
	g := startGateway(t, f.srv, &GatewayOptions{
		MaxSessions:  1,
		Instructions: "Call echo to hear your text back.",
		Client:       &bus.ClientOptions{Filter: listed.filter},
	})
	u := serveGatewayHTTP(t, g)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u})
	natstest.WaitFor(t, "the session to be tracked", func() bool { return g.Sessions() == 1 })
	before := listed.get()

	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	code, id, msg := postMCP(t, u, "2026-07-28", "server/discover", discover)
	if code != http.StatusOK || id != "" {
		t.Fatalf("discover at MaxSessions: %d, session %q, %v; want 200 and no session", code, id, msg)
	}
	var res sdk.DiscoverResult
	if err := remarshal(msg["result"], &res); err != nil {
		t.Fatalf("discover answered %v: %v", msg, err)
	}
	if slices.ContainsFunc(res.SupportedVersions, func(v string) bool { return v >= "2026-07-28" }) || !slices.Contains(res.SupportedVersions, "2025-11-25") {
		t.Errorf("discover lists the versions %q, want those before 2026-07-28", res.SupportedVersions)
	}
	if want := c.cs.InitializeResult().Capabilities; !reflect.DeepEqual(res.Capabilities, want) {
		t.Errorf("discover answered the capabilities %+v, a session has %+v", res.Capabilities, want)
	}

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, version := range []string{"2026-07-28", "2099-01-01"} {
		if code, id, msg := postMCP(t, u, version, "server/discover", initialize); code == http.StatusOK || id != "" {
			t.Errorf("an initialize said to be a discover (version %s): %d, session %q, %v", version, code, id, msg)
		}
	}
	if got := listed.get(); !slices.Equal(got, before) {
		t.Errorf("the tools of sessions %q were listed, before the probes %q", got, before)
	}
	if n := g.Sessions(); n != 1 {
		t.Errorf("%d sessions, want the client's alone", n)
	}

	// A real initialize past MaxSessions is refused, in words that count.
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, u, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "has 1 session open, the most it takes") {
		t.Errorf("an initialize past MaxSessions 1: %d %q, want 503 saying 1 session open", resp.StatusCode, b)
	}
}
