package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
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
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, srv), tk, &bus.WorkerOptions{Meta: map[string]func() any{wire.MetaSkills: skill.Announce(set)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g, err := NewGateway(ctx, natstest.Connect(t, srv), &GatewayOptions{Instructions: "You are served by toolbus."})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	got := c.cs.InitializeResult().Instructions
	for _, want := range []string{"You are served by toolbus.", "Cite the docs you read.", "<name>summarise</name>"} {
		if !strings.Contains(got, want) {
			t.Errorf("instructions lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Never browse") {
		t.Errorf("an inactive group's instructions were given:\n%s", got)
	}
}
