package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// mountedFleet serves, on a worker named instance, the MCP servers cfgs
// mounted as a worker mounts them: their tools, their resources, prompts
// and completions passed on (ServeMounted) and announced.
func mountedFleet(t *testing.T, cfgs ...ServerConfig) *fleetFixture {
	t.Helper()
	f := &fleetFixture{srv: toolFleet(t, nil, func(*toolkit.Toolkit) {})}
	f.url = f.srv.ClientURL()
	serveMounted(t, f, "w-mounted", cfgs...)
	return f
}

func serveMounted(t *testing.T, f *fleetFixture, instance string, cfgs ...ServerConfig) {
	t.Helper()
	tk := newWorkerToolkit(t, f.srv)
	servers, err := Mount(natstest.Ctx(t), tk, cfgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { servers.Close() })
	nc := natstest.Connect(t, f.srv)
	sub, err := ServeMounted(nc, instance, servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance, Meta: map[string]func() any{wire.MetaMCPServers: servers.Announce()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
}

// waitMounted waits until g's fleet knows the instances (its first
// discovery collects answers for 250 ms only; a busy machine answers
// later, and the next announcement comes seconds after).
func waitMounted(t *testing.T, g *Gateway, instances ...string) {
	t.Helper()
	natstest.WaitFor(t, fmt.Sprintf("the gateway to know %v", instances), func() bool {
		known := map[string]bool{}
		for _, in := range g.fleet.Instances() {
			known[in.ID] = true
		}
		for _, id := range instances {
			if !known[id] {
				return false
			}
		}
		return true
	})
}

// TestGatewayServesMountedServers: the resources, resource templates,
// prompts and completions of an MCP server mounted on a worker reach an
// MCP client of the gateway over the bus, named like the server's tools
// (mcp__<server>__…) and under their own names when the server is
// exposed; a server whose group the session has not activated shows
// nothing until it is.
func TestGatewayServesMountedServers(t *testing.T) {
	everything := everythingStdio(t, "everything")
	everything.ServeResources = true
	hidden := everythingStdio(t, "hidden")
	hidden.Group, hidden.ServeResources = "extra", true
	private := everythingStdio(t, "private") // serve_resources off: its tools only
	f := mountedFleet(t, everything, hidden, private)
	ctx := natstest.Ctx(t)

	for _, exposed := range []bool{false, true} {
		t.Run(map[bool]string{false: "prefixed", true: "exposed"}[exposed], func(t *testing.T) {
			opts := &GatewayOptions{}
			name := func(own string) string { return ToolName("everything", own) }
			if exposed {
				opts.ExposeServers = []string{"everything"}
				name = func(own string) string { return own }
			}
			g := startGateway(t, f.srv, opts)
			waitMounted(t, g, "w-mounted")
			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})

			prompts, err := c.cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range prompts.Prompts {
				names = append(names, p.Name)
			}
			if !slices.Contains(names, name("simple-prompt")) || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "hidden") || strings.Contains(n, "private") }) {
				t.Fatalf("prompts %v: want %s and nothing of the inactive group's server or the one without serve_resources", names, name("simple-prompt"))
			}
			got, err := c.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name("args-prompt"), Arguments: map[string]string{"city": "Lyon"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Messages) == 0 || !strings.Contains(messageText(got.Messages[0]), "Lyon") {
				t.Fatalf("prompt messages %+v: want the argument in them", got.Messages)
			}

			resources, err := c.cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(resources.Resources) == 0 {
				t.Fatal("no resources listed")
			}
			first := resources.Resources[0]
			if exposed == strings.HasPrefix(first.Name, "mcp__everything__") {
				t.Fatalf("resource %q named %q", first.URI, first.Name)
			}
			read, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: first.URI})
			if err != nil {
				t.Fatal(err)
			}
			if len(read.Contents) != 1 || read.Contents[0].URI != first.URI {
				t.Fatalf("read %s: %+v", first.URI, read.Contents)
			}
			if _, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://nothing/here"}); err == nil {
				t.Fatal("an unknown URI was read")
			}

			templates, err := c.cs.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(templates.ResourceTemplates) == 0 {
				t.Fatal("no resource templates listed")
			}

			done, err := c.cs.Complete(ctx, &sdk.CompleteParams{
				Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: name("completable-prompt")},
				Argument: sdk.CompleteParamsArgument{Name: "department", Value: "E"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(done.Completion.Values, "Engineering") {
				t.Fatalf("completion values %v: want Engineering", done.Completion.Values)
			}
		})
	}

	t.Run("activated", func(t *testing.T) {
		g := newGateway(t, f)
		waitMounted(t, g, "w-mounted")
		c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
		if _, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: toolkit.MetaToolName, Arguments: map[string]any{"extra": true}}); err != nil {
			t.Fatal(err)
		}
		prompts, err := c.cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(prompts.Prompts, func(p *sdk.Prompt) bool { return p.Name == ToolName("hidden", "simple-prompt") }) {
			t.Fatal("the activated group's server lists no prompts")
		}
	})
}

func messageText(m *sdk.PromptMessage) string {
	if tc, ok := m.Content.(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// resumeCounter counts the requests that resume a stream (Last-Event-ID).
type resumeCounter struct {
	resumed atomic.Int32
}

func (rc *resumeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Last-Event-ID") != "" {
		rc.resumed.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayStreamPoll: with StreamPoll, the response stream of a call
// that runs longer is closed mid-call (SEP-1699) and the client resumes
// it with Last-Event-ID, getting the result all the same; a client on a
// protocol version without resumable streams keeps its stream.
func TestGatewayStreamPoll(t *testing.T) {
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		if err := tk.Add(toolkit.Func("nap", "Naps.", func(ctx context.Context, in struct{}) (string, error) {
			time.Sleep(400 * time.Millisecond)
			return "rested", nil
		})); err != nil {
			t.Fatal(err)
		}
	})
	ctx := natstest.Ctx(t)
	g := startGateway(t, srv, &GatewayOptions{StreamPoll: 100 * time.Millisecond})
	u := serveGatewayHTTP(t, g)
	for version, wantResumed := range map[string]bool{"2025-11-25": true, "2025-06-18": false} {
		t.Run(version, func(t *testing.T) {
			rc := &resumeCounter{}
			client := sdk.NewClient(&sdk.Implementation{Name: "poll-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: rc}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nap", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); got != "rested" {
				t.Fatalf("result %q", got)
			}
			if got := rc.resumed.Load() > 0; got != wantResumed {
				t.Fatalf("resumed %d times; want resumed: %v", rc.resumed.Load(), wantResumed)
			}
		})
	}
}

// TestGatewayRelaysResourceUpdates: a client of the gateway subscribes to
// a resource of a server mounted on a worker and hears of its updates
// (the go-sdk fixture server updates test://watched-resource every 3 s);
// after unsubscribing it hears no more, and a client that never
// subscribed hears nothing.
func TestGatewayRelaysResourceUpdates(t *testing.T) {
	f := mountedFleet(t, ServerConfig{Name: "fixture", Transport: TransportStdio, Command: goSDKEverythingServer(t), ServeResources: true})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	u := serveGatewayHTTP(t, g)
	ctx := natstest.Ctx(t)
	connect := func(updates chan string) *sdk.ClientSession {
		client := sdk.NewClient(&sdk.Implementation{Name: "subscriber", Version: "1"}, &sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				select {
				case updates <- req.Params.URI:
				default:
				}
			},
		})
		cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	updates, others := make(chan string, 16), make(chan string, 16)
	cs := connect(updates)
	connect(others)
	const uri = "test://watched-resource"
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updates:
		if got != uri {
			t.Fatalf("update of %q, want %q", got, uri)
		}
	case <-time.After(guardTimeout):
		t.Fatal("no resource update within", guardTimeout)
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// An update sent before the unsubscribe may still be on its way: let a
	// whole period of the fixture's (3 s) pass, then expect silence for
	// the next.
	drain := time.After(3500 * time.Millisecond)
	for draining := true; draining; {
		select {
		case <-updates:
		case <-drain:
			draining = false
		}
	}
	select {
	case got := <-updates:
		t.Fatalf("an update of %q after unsubscribing", got)
	case got := <-others:
		t.Fatalf("a client that never subscribed heard of %q", got)
	case <-time.After(4 * time.Second): // longer than the fixture's 3 s period
	}
}

// TestMountedServerAsksTheCaller: a mounted server's sampling and
// elicitation requests and its log messages, made during a call, reach
// the caller of that call over the bus (the go-sdk fixture server's
// test_sampling, test_elicitation and test_tool_with_logging); a caller
// that cannot answer makes the server's request fail, which the server's
// tool reports.
func TestMountedServerAsksTheCaller(t *testing.T) {
	// 2025-11-25: from 2026-07-28 a server may not send requests while it
	// serves one (it returns input requests instead, SEP-2322).
	// "current", on the latest version, asks in its result instead
	// (test_input_required_result_elicitation): the go-sdk's client
	// fulfils such requests with the same handlers.
	bin := goSDKEverythingServer(t)
	f := mountedFleet(t, ServerConfig{Name: "fixture", Transport: TransportStdio, Command: bin, ProtocolVersion: "2025-11-25", LogLevel: "info"},
		ServerConfig{Name: "current", Transport: TransportStdio, Command: bin})
	ctx := natstest.Ctx(t)
	var asked []string
	c, err := bus.NewClient(natstest.Connect(t, f.srv), &bus.ClientOptions{Asker: func(_ context.Context, method string, params any) (any, error) {
		asked = append(asked, method)
		// The server's params as an MCP client would get them.
		b, _ := json.Marshal(params)
		if want := map[string]string{toolkit.MethodSample: `"text":"2+2?"`, toolkit.MethodElicit: `"requestedSchema"`}[method]; !strings.Contains(string(b), want) {
			return nil, fmt.Errorf("%s params %s: want %s in them", method, b, want)
		}
		switch method {
		case toolkit.MethodSample:
			return map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "four"}}, nil
		case toolkit.MethodElicit:
			return map[string]any{"action": "accept", "content": map[string]any{"username": "ada", "email": "ada@example.com", "name": "Ada"}}, nil
		}
		return nil, fmt.Errorf("unexpected %s", method)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	call := func(c *bus.Client, tool string, input map[string]any) (*toolkit.Response, []toolkit.LogMessage) {
		t.Helper()
		var logs []toolkit.LogMessage
		var final *toolkit.Response
		server := "fixture"
		if strings.HasPrefix(tool, "test_input_required") {
			server = "current"
		}
		for ev := range c.Call(ctx, toolkit.ToolCall{Name: ToolName(server, tool), Input: input}) {
			if ev.Log != nil {
				logs = append(logs, *ev.Log)
			}
			if ev.Final != nil {
				final = ev.Final
			}
		}
		return final, logs
	}

	if final, _ := call(c, "test_sampling", map[string]any{"prompt": "2+2?"}); final.State != toolkit.StateSuccess || final.Text() != "LLM response: four" {
		t.Fatalf("test_sampling: %s %q", final.State, final.Text())
	}
	if final, _ := call(c, "test_elicitation", map[string]any{"message": "Who are you?"}); final.State != toolkit.StateSuccess || !strings.Contains(final.Text(), "ada") {
		t.Fatalf("test_elicitation: %s %q", final.State, final.Text())
	}
	if final, _ := call(c, "test_input_required_result_elicitation", map[string]any{}); final.State != toolkit.StateSuccess || final.Text() != "Hello, Ada!" {
		t.Fatalf("test_input_required_result_elicitation: %s %q", final.State, final.Text())
	}
	if !slices.Equal(asked, []string{toolkit.MethodSample, toolkit.MethodElicit, toolkit.MethodElicit}) {
		t.Fatalf("asked %v", asked)
	}
	// All three, in order, though the last comes right before the result.
	final, logs := call(c, "test_tool_with_logging", map[string]any{})
	var said []string
	for _, l := range logs {
		said = append(said, fmt.Sprint(l.Level, ":", l.Data))
	}
	if want := []string{"info:Tool execution started", "info:Tool processing data", "info:Tool execution completed"}; final.State != toolkit.StateSuccess || !slices.Equal(said, want) {
		t.Fatalf("test_tool_with_logging: %s %q, logs %q, want %q", final.State, final.Text(), said, want)
	}

	mute, err := bus.NewClient(natstest.Connect(t, f.srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	if final, _ := call(mute, "test_sampling", map[string]any{"prompt": "2+2?"}); final.State != toolkit.StateError || !strings.Contains(final.Text(), "sampling failed") {
		t.Fatalf("test_sampling without an answerer: %s %q", final.State, final.Text())
	}
}

// TestMountedServerGroupsPerInstance: a server two workers mount in
// different groups is reached, for a session, only through the workers
// that mount it in a group the session sees.
func TestMountedServerGroupsPerInstance(t *testing.T) {
	inExtra := everythingStdio(t, "dual")
	inExtra.Group, inExtra.ServeResources = "extra", true
	f := mountedFleet(t, inExtra)
	inBasic := everythingStdio(t, "dual")
	inBasic.ServeResources = true
	serveMounted(t, f, "w-basic", inBasic)
	g := newGateway(t, f)
	connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	waitMounted(t, g, "w-mounted", "w-basic")
	// The session is tracked from its initialize, as the go-sdk serves it.
	natstest.WaitFor(t, "the session tracked", func() bool { return g.Sessions() == 1 })
	g.mu.Lock()
	var s *gatewaySession
	for gs := range g.sessions {
		s = gs
	}
	g.mu.Unlock()
	servers, err := s.mountedServers(natstest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || !slices.Equal(servers[0].instances, []string{"w-basic"}) {
		t.Fatalf("servers %+v: want dual through w-basic only", servers)
	}
}

// TestServerLogs: on the current protocol (2026-07-28, where the log level
// goes with each request and a subscriptions/listen request stays open for
// the session's life), a stateful stdio server's log messages reach the
// caller of the one call in flight, also after an earlier call was
// cancelled; over Streamable HTTP a call's own response stream carries
// them.
func TestServerLogs(t *testing.T) {
	for name, cfg := range goPeers(t) {
		if name == "sse" {
			continue // one stream for everything: attributed by session instead
		}
		t.Run(name, func(t *testing.T) {
			c := cfg(t, "s")
			c.LogLevel = "info"
			tk, _ := mount(t, c)
			ctx, cancel := context.WithTimeout(natstest.Ctx(t), 300*time.Millisecond)
			for range tk.Call(ctx, toolkit.ToolCall{Name: ToolName("s", "block")}) {
			}
			cancel()
			var logs []string
			var final *toolkit.Response
			for ev := range tk.Call(natstest.Ctx(t), toolkit.ToolCall{Name: ToolName("s", "log"), Input: map[string]any{"n": 3}}) {
				if ev.Log != nil {
					logs = append(logs, fmt.Sprint(ev.Log.Data))
				}
				if ev.Final != nil {
					final = ev.Final
				}
			}
			if want := []string{"message 1", "message 2", "message 3"}; final.Text() != "logged" || !slices.Equal(logs, want) {
				t.Fatalf("%q, logs %q, want %q", final.Text(), logs, want)
			}
		})
	}
}
