package mcp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/skill"
)

// TestGatewaySkillNamesAnyText: a skill's name is any text its front
// matter gives (AgentScope takes it as it is): "PDF Processing", "a/b",
// "a:b", "a@b". Each is a prompt and its SKILL.md and files are resources
// that read back as that skill's. A name that cannot be a URI's host made
// the go-sdk's AddResource panic, in the gateway's refresh goroutine,
// which took the gateway down; "a@b" read as skill "b".
func TestGatewaySkillNamesAnyText(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"PDF Processing", "a/b", "a:b", "a@b", "b", "50% off?#", "résumé"}
	for i, name := range names {
		dir := t.TempDir()
		doc := "---\nname: '" + name + "'\ndescription: Skill " + string(rune('A'+i)) + ".\n---\nbody of " + name
		files := map[string]string{"SKILL.md": doc, "ref/notes.txt": "notes of " + name}
		for f, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := set.AddDir("", dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	serveSkills(t, srv, tk, set)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, srv, nil)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})

	prompts, err := c.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range prompts.Prompts {
		got = append(got, p.Name)
	}
	if want := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("prompts %q, want %q", got, want)
	}
	for _, name := range names {
		p, err := c.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name})
		if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*sdk.TextContent).Text != "body of "+name {
			t.Errorf("prompt %q: %+v %v", name, p, err)
		}
	}
	resources, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	for _, r := range resources.Resources {
		res, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: r.URI})
		if err != nil || len(res.Contents) != 1 {
			t.Errorf("%s (%s): %+v %v", r.URI, r.Name, res, err)
			continue
		}
		text := res.Contents[0].Text
		switch {
		case strings.HasSuffix(r.URI, "/SKILL.md"):
			name := strings.TrimPrefix(text, "body of ")
			if r.Name != name || r.MIMEType != "text/markdown" {
				t.Errorf("%s is named %q and reads %q", r.URI, r.Name, text)
			}
			read[name+" SKILL.md"] = true
		default:
			name := strings.TrimPrefix(text, "notes of ")
			if r.Name != name+"/ref/notes.txt" {
				t.Errorf("%s is named %q and reads %q", r.URI, r.Name, text)
			}
			read[name+" notes"] = true
		}
	}
	for _, name := range names {
		if !read[name+" SKILL.md"] || !read[name+" notes"] {
			t.Errorf("skill %q: its resources were not both listed and read (%v)", name, read)
		}
	}
}
