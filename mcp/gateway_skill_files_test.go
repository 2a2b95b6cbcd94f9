package mcp

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
)

// TestGatewaySkillFilesAskedTogether: the gateway asks for the files of
// the skills a session sees together, not one skill after another, each
// waiting up to 10 s for a worker that does not answer: a resources/list
// took that long for every such skill. The worker here answers the
// requests for its three skills' files only once all three wait; one by
// one, each gave up first and the listing had none of their files.
func TestGatewaySkillFilesAskedTogether(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	dir := t.TempDir()
	names := []string{"alpha", "beta", "gamma"}
	for _, name := range names {
		for file, body := range map[string]string{"SKILL.md": "---\nname: " + name + "\ndescription: The " + name + " skill.\n---\n# " + name, "notes.txt": name} {
			p := filepath.Join(dir, name, file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	set, err := skill.NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, err := set.AddDir("", filepath.Join(dir, name), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	wnc := natstest.Connect(t, srv)
	w, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", Meta: map[string]func() any{wire.MetaSkills: skill.Announce(set)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	// The skills are served under another name; w1's requests are held
	// until three wait, then passed on there, answered to their askers.
	if _, err := skill.Serve(wnc, "w1-held", set, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*nats.Msg
	released := false
	if _, err := wnc.Subscribe(wire.SkillSubject("w1"), func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if released {
			passHeld(wnc, m)
			return
		}
		if held = append(held, m); len(held) == len(names) {
			for _, h := range held {
				passHeld(wnc, h)
			}
			released = true
		}
	}); err != nil {
		t.Fatal(err)
	}

	ctx := natstest.Ctx(t)
	g := startGateway(t, srv, nil)
	waitMounted(t, g, "w1")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	resources, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range resources.Resources {
		got[r.URI] = true
	}
	for _, name := range names {
		if uri := "skill://" + name + "/notes.txt"; !got[uri] {
			t.Errorf("resources %v: no %s", got, uri)
		}
	}
}

// passHeld sends a skill request held for w1 on to the skills' server.
func passHeld(nc *nats.Conn, m *nats.Msg) {
	nc.PublishMsg(&nats.Msg{Subject: wire.SkillSubject("w1-held"), Reply: m.Reply, Header: m.Header, Data: m.Data})
}
