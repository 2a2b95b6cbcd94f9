package mcp

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewaySkillToolListedWithGroup: an MCP session lists the Skill
// tool only while it sees a skill, and is told its list changed when
// activating the group of the only skill brings the tool in.
func TestGatewaySkillToolListedWithGroup(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web tools."}); err != nil {
		t.Fatal(err)
	}
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("web", skill.Static{{Name: "browse", Description: "Browse carefully.", Dir: "/skills/browse", Markdown: "# Browse"}}); err != nil {
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
	if _, ok := listNames(t, c)[skill.ViewerName]; ok {
		t.Fatal("the Skill tool is listed while no skill is visible")
	}
	for len(c.changed) > 0 {
		<-c.changed
	}
	if r, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: toolkit.MetaToolName, Arguments: map[string]any{"web": true}}); err != nil || r.IsError {
		t.Fatalf("reset_tools: %+v %v", r, err)
	}
	select {
	case <-c.changed:
	case <-time.After(guardTimeout):
		t.Fatalf("no list_changed %v after the skill's group was activated", guardTimeout)
	}
	if _, ok := listNames(t, c)[skill.ViewerName]; !ok {
		t.Fatal("the Skill tool is not listed with its skill's group active")
	}
}
