package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayInstructions: a session's initialize carries the gateway's
// instructions, those of the session's active groups (1.x
// get_activated_notes) and the skills prompt of what it sees; an inactive
// group's are left out.
func TestGatewayInstructions(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	for _, g := range []toolkit.Group{
		{Name: "docs", Description: "Docs tools.", Instructions: "Cite the docs you read.", Active: true},
		{Name: "web", Description: "Web tools.", Instructions: "Never browse unknown sites."},
	} {
		if err := tk.AddGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := tk.Add(toolkit.Func("lookup", "Look something up.", func(ctx context.Context, in textIn) (string, error) { return in.Text, nil }), toolkit.InGroup("docs")); err != nil {
		t.Fatal(err)
	}
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("", skill.Static{{Name: "summarise", Description: "Summarise long pages.", Dir: "/skills/summarise", Markdown: "# Summarise"}}); err != nil {
		t.Fatal(err)
	}
	// A skill of the inactive group: neither in the prompt nor a prompt.
	if err := set.Add("web", skill.Static{{Name: "browse", Description: "Browse carefully.", Dir: "/skills/browse", Markdown: "# Browse"}}); err != nil {
		t.Fatal(err)
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	serveSkills(t, srv, tk, set)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, srv, &GatewayOptions{Instructions: "You are served by toolbus."})
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	got := c.cs.InitializeResult().Instructions
	for _, want := range []string{"You are served by toolbus.", "Cite the docs you read.", "<name>summarise</name>"} {
		if !strings.Contains(got, want) {
			t.Errorf("instructions lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Never browse") || strings.Contains(got, "<name>browse</name>") {
		t.Errorf("an inactive group's instructions or skills were given:\n%s", got)
	}

	// The skill is a prompt and a resource, read from the worker.
	prompts, err := c.cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "summarise" || prompts.Prompts[0].Description != "Summarise long pages." {
		t.Fatalf("prompts: %+v %v", prompts, err)
	}
	p, err := c.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "summarise"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*sdk.TextContent).Text != "# Summarise" {
		t.Fatalf("prompt: %+v %v", p, err)
	}
	resources, err := c.cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) != 1 || resources.Resources[0].URI != "skill://summarise/SKILL.md" || resources.Resources[0].MIMEType != "text/markdown" {
		t.Fatalf("resources: %+v %v", resources, err)
	}
	r, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://summarise/SKILL.md"})
	if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "# Summarise" {
		t.Fatalf("resource: %+v %v", r, err)
	}
	if _, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://nope/SKILL.md"}); err == nil {
		t.Fatal("an unknown skill's resource was read")
	}
}

// TestGatewaySkillFiles: a skill's other files are resources
// skill://<name>/<path>, listed and read from the worker declaring the
// skill (text or blob); what the skill's directory does not serve is not
// found.
func TestGatewaySkillFiles(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	dir := t.TempDir()
	for name, body := range map[string]string{"SKILL.md": "---\nname: pdf\ndescription: Fill PDF forms.\n---\n# PDF\nRun scripts/fill.py.", "scripts/fill.py": "print('fill')\n", "logo.png": "\x89PNG\xff", ".token": "secret"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("", dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	serveSkills(t, srv, tk, set)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, srv, nil)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	resources, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI+" "+r.MIMEType)
	}
	if want := []string{"skill://pdf/SKILL.md text/markdown", "skill://pdf/logo.png image/png", "skill://pdf/scripts/fill.py " + skill.MIMEType("fill.py")}; !slices.Equal(uris, want) {
		t.Errorf("resources %q, want %q", uris, want)
	}
	r, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://pdf/scripts/fill.py"})
	if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "print('fill')\n" {
		t.Fatalf("fill.py: %+v %v", r, err)
	}
	r, err = c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://pdf/logo.png"})
	if err != nil || len(r.Contents) != 1 || string(r.Contents[0].Blob) != "\x89PNG\xff" || r.Contents[0].MIMEType != "image/png" {
		t.Fatalf("logo.png: %+v %v", r, err)
	}
	for _, uri := range []string{"skill://pdf/.token", "skill://pdf/../../etc/passwd", "skill://pdf/%2e%2e/x", "skill://nope/fill.py", "skill://pdf/", "skill://pdf/missing.txt"} {
		if r, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s was read: %+v", uri, r)
		}
	}
}

// TestGatewayRelaysToolLogs: a tool's log messages on a worker reach the
// MCP client as notifications/message, at or above the level it set.
func TestGatewayRelaysToolLogs(t *testing.T) {
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		if err := tk.Add(toolkit.Stream("chatty", "Logs, then answers.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
			for _, l := range []toolkit.LogMessage{{Level: "debug", Data: "noise"}, {Level: "warning", Logger: "chatty", Data: map[string]any{"disk": "low"}}} {
				if err := toolkit.Log(w, l); err != nil {
					return err
				}
			}
			return w.Write(toolkit.Text("answer"))
		})); err != nil {
			t.Fatal(err)
		}
	})
	g := newGateway(t, &fleetFixture{srv: srv})
	logs := make(chan *sdk.LoggingMessageParams, 8)
	client := sdk.NewClient(&sdk.Implementation{Name: "log-test", Version: "1"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) { logs <- req.Params },
	})
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.InitializeResult().Capabilities.Logging == nil {
		t.Fatal("the gateway does not declare logging")
	}
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "chatty"})
	if err != nil || res.IsError {
		t.Fatalf("chatty: %+v %v", res, err)
	}
	select {
	case l := <-logs:
		if l.Level != "warning" || l.Logger != "chatty" || l.Data.(map[string]any)["disk"] != "low" {
			t.Fatalf("log: %+v", l)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/message")
	}
	select {
	case l := <-logs:
		t.Fatalf("a message below the level set: %+v", l)
	default:
	}
}

// TestGatewayRelaysElicitation: a tool on a worker that asks its caller
// for input reaches the MCP client's elicitation handler through the
// gateway, and the person's answer comes back to the tool; a client
// without the capability makes the tool hear why.
func TestGatewayRelaysElicitation(t *testing.T) {
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		if err := tk.Add(toolkit.Stream("greet", "Asks for a name.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
			res, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": "Who are you?",
				"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return w.Write(toolkit.Text("no answer: " + err.Error()))
			}
			m := res.(map[string]any)
			return w.Write(toolkit.Text(fmt.Sprintf("%v, %v", m["action"], m["content"].(map[string]any)["name"])))
		})); err != nil {
			t.Fatal(err)
		}
	})
	u := serveGatewayHTTP(t, newGateway(t, &fleetFixture{srv: srv}))
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()

	var asked string
	client := sdk.NewClient(&sdk.Implementation{Name: "elicit-test", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = req.Params.Message
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet"})
	if err != nil || resultText(res) != "accept, Ada" || asked != "Who are you?" {
		t.Fatalf("greet: %q (asked %q) %v", resultText(res), asked, err)
	}

	plain := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u})
	res, err = plain.cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet"})
	if err != nil || !strings.HasPrefix(resultText(res), "no answer: ") {
		t.Fatalf("a client without elicitation: %q %v", resultText(res), err)
	}
}

// TestGatewayApprovesByElicitation: a call that asks for approval is put
// to the person behind an MCP client that takes elicitations; an accept is
// recorded as the approval of that call, which the gateway sends again and
// runs once; a decline ends it denied; a client without elicitation gets
// approval_required as before.
func TestGatewayApprovesByElicitation(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	st, err := permission.NewKVStore(natstest.Ctx(t), natstest.JS(t, natstest.Connect(t, srv)), nil)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := permission.NewGuard(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := newWorkerToolkit(t, srv)
	tk.Use(permission.Middleware(guard))
	var deploys atomic.Int32
	if err := tk.Add(toolkit.Func("deploy", "Deploy to an environment.", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		deploys.Add(1)
		return "deployed to " + in.Env, nil
	})); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, srv), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, srv, &GatewayOptions{
		Approve: func(ctx context.Context, scope, callID, by string) error {
			_, err := guard.Approve(ctx, scope, callID, by)
			return err
		},
	})
	u := serveGatewayHTTP(t, g)

	var answer atomic.Value
	var asked atomic.Value
	client := sdk.NewClient(&sdk.Implementation{Name: "approver", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Store(req.Params.Message)
			return &sdk.ElicitResult{Action: answer.Load().(string)}, nil
		},
	})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	deploy := &sdk.CallToolParams{Name: "deploy", Arguments: map[string]any{"env": "prod"}}

	answer.Store("accept")
	res, err := cs.CallTool(ctx, deploy)
	if err != nil || res.IsError || resultText(res) != "deployed to prod" || deploys.Load() != 1 {
		t.Fatalf("accepted: %q (ran %d) %v", resultText(res), deploys.Load(), err)
	}
	if m, _ := asked.Load().(string); !strings.Contains(m, "Allow the tool 'deploy' to run") {
		t.Fatalf("the person was asked %q", m)
	}
	answer.Store("decline")
	res, err = cs.CallTool(ctx, deploy)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "did not approve") || deploys.Load() != 1 {
		t.Fatalf("declined: %q (ran %d) %v", resultText(res), deploys.Load(), err)
	}
	plain := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u})
	res, err = plain.cs.CallTool(ctx, deploy)
	if err != nil || !strings.Contains(resultText(res), "PermissionRequiredError") || deploys.Load() != 1 {
		t.Fatalf("no elicitation: %q %v", resultText(res), err)
	}
}

// TestGatewayRelaysSampling: a tool's sampling/createMessage reaches the
// MCP client's model through the gateway and the completion comes back.
func TestGatewayRelaysSampling(t *testing.T) {
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		if err := tk.Add(toolkit.Stream("summarise", "Asks the caller's model.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
			res, err := toolkit.Ask(ctx, w, toolkit.MethodSample, map[string]any{
				"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Summarise: toolbus."}}},
				"maxTokens": 50,
			})
			if err != nil {
				return w.Write(toolkit.Text("no answer: " + err.Error()))
			}
			m := res.(map[string]any)
			content, _ := m["content"].(map[string]any)
			return w.Write(toolkit.Text(fmt.Sprintf("%v: %v", m["model"], content["text"])))
		})); err != nil {
			t.Fatal(err)
		}
	})
	u := serveGatewayHTTP(t, newGateway(t, &fleetFixture{srv: srv}))
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "sampler", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			prompt := req.Params.Messages[0].Content.(*sdk.TextContent).Text
			return &sdk.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &sdk.TextContent{Text: "short: " + prompt}}, nil
		},
	})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "summarise"})
	if err != nil || resultText(res) != "test-model: short: Summarise: toolbus." {
		t.Fatalf("summarise: %q %v", resultText(res), err)
	}
}

// toolFleet starts a NATS server and a worker (opts) serving the tools
// setup adds to its toolkit (KV group state), and returns the server.
func toolFleet(t *testing.T, opts *bus.WorkerOptions, setup func(tk *toolkit.Toolkit)) *embedded.Server {
	t.Helper()
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	setup(tk)
	w, err := bus.Serve(natstest.Connect(t, srv), tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return srv
}

// TestGatewayExposesServers: with ExposeServers, a mounted server's tools
// are listed and called under their own names (the gateway as a proxy of
// that server, served by every worker mounting it); a name another tool
// has keeps its prefixed form.
func TestGatewayExposesServers(t *testing.T) {
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		for _, tool := range []*toolkit.Tool{
			toolkit.Func(ToolName("everything", "echo"), "Echoes.", func(ctx context.Context, in textIn) (string, error) { return "proxied " + in.Text, nil }),
			toolkit.Func(ToolName("everything", "add"), "Adds.", func(ctx context.Context, in struct{}) (string, error) { return "server add", nil }),
			toolkit.Func("add", "The fleet's own add.", func(ctx context.Context, in struct{}) (string, error) { return "fleet add", nil }),
		} {
			if err := tk.Add(tool); err != nil {
				t.Fatal(err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, srv, &GatewayOptions{ExposeServers: []string{"everything"}})
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	names := sortedKeys(listNames(t, c))
	if want := []string{"add", "echo", "mcp__everything__add"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
	for tool, want := range map[string]string{"echo": "proxied hi", "add": "fleet add", "mcp__everything__add": "server add"} {
		args := map[string]any{}
		if tool == "echo" {
			args["text"] = "hi"
		}
		if got := resultText(callTool(t, ctx, c, tool, args, nil)); got != want {
			t.Errorf("%s: %q, want %q", tool, got, want)
		}
	}
}

// TestGatewaySchemasKeepDeclarationOrder: the tools/list JSON an MCP
// client gets from the gateway has a worker's typed tool's properties in
// field order and reset_tools' groups in registration order (announced
// with the schema, through the bus).
func TestGatewaySchemasKeepDeclarationOrder(t *testing.T) {
	type in struct {
		Thinking string `json:"thinking"`
		Query    string `json:"query"`
		Limit    int    `json:"limit,omitempty"`
	}
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		for _, g := range []string{"web", "files"} {
			if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools", Active: true}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tk.Add(toolkit.Func("search", "Search.", func(ctx context.Context, in in) (string, error) { return in.Query, nil })); err != nil {
			t.Fatal(err)
		}
	})
	url := serveGatewayHTTP(t, newGateway(t, &fleetFixture{srv: srv}))
	post := func(session, body string) (string, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	session, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, list := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	// The go-sdk writes a tool's name after its schema.
	i, j := strings.Index(list, `"description":"Search."`), strings.Index(list, `"name":"search"`)
	if i < 0 || j < i {
		t.Fatalf("tools/list: %s", list)
	}
	if search := list[i:j]; !inOrder(search, `"thinking"`, `"query"`, `"limit"`) {
		t.Errorf("search's properties are not in field order: %s", search)
	}
	if meta := list[:strings.Index(list, `"name":"reset_tools"`)]; !inOrder(meta, `"web"`, `"files"`) {
		t.Errorf("reset_tools' groups are not in registration order: %s", list)
	}
}

// inOrder reports whether the strings occur in s in this order.
func inOrder(s string, words ...string) bool {
	at := -1
	for _, w := range words {
		i := strings.Index(s, w)
		if i <= at {
			return false
		}
		at = i
	}
	return true
}

// serveSkills serves tk as worker w1 announcing and serving set's skills.
func serveSkills(t *testing.T, srv *embedded.Server, tk *toolkit.Toolkit, set *skill.Set) {
	t.Helper()
	wnc := natstest.Connect(t, srv)
	w, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", Meta: map[string]func() any{wire.MetaSkills: skill.Announce(set)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	if _, err := skill.Serve(wnc, "w1", set, nil); err != nil {
		t.Fatal(err)
	}
}
