package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/toolbus/toolbus/toolkit"
)

func schemaNames(t *testing.T, c *Client, session string) string {
	t.Helper()
	schemas, err := c.Schemas(kvTestCtx(t), session)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range schemas {
		names = append(names, s.Function.Name)
	}
	return strings.Join(names, ",")
}

// Client.Schemas lists the tools of every worker (each announces itself
// from Serve), with the session's groups read from the KV bucket at the
// revision the client saw; a worker's Stop takes its tools off the list;
// without a bucket, the groups announced active apply.
func TestClientSchemasFleetWide(t *testing.T) {
	tool := func(name string) *toolkit.Tool {
		return toolkit.Func(name, "The "+name+" tool.", func(context.Context, struct{}) (string, error) { return name, nil })
	}
	t.Run("no bucket", func(t *testing.T) {
		s := kvTestServer(t)
		tk1 := toolkit.New(nil)
		if err := tk1.AddGroup(toolkit.Group{Name: "vault", Description: "Secrets."}); err != nil {
			t.Fatal(err)
		}
		mustAddT(t, tk1, tool("alpha"))
		mustAddT(t, tk1, tool("secret"), toolkit.InGroup("vault"))
		tk2 := toolkit.New(nil)
		mustAddT(t, tk2, tool("beta"))
		serveKV(t, s, tk1, &WorkerOptions{Instance: "w1"})
		serveKV(t, s, tk2, &WorkerOptions{Instance: "w2"})
		tk3 := toolkit.New(nil)
		mustAddT(t, tk3, tool("gamma"))
		serveKV(t, s, tk3, &WorkerOptions{Instance: "w3", AnnounceInterval: -1}) // not announced, not listed
		c := clientKV(t, s)
		if got := schemaNames(t, c, "agent"); got != "reset_tools,alpha,beta" {
			t.Fatalf("Schemas = %s, want both workers' tools", got)
		}
		// List still asks one worker.
		reply, err := c.List(kvTestCtx(t), "agent")
		if err != nil {
			t.Fatal(err)
		}
		if reply.Worker == "" {
			t.Fatalf("List reply without a worker: %+v", reply)
		}
	})

	t.Run("groups from the bucket", func(t *testing.T) {
		s := kvTestServer(t)
		state := newTestKVState(t, kvTestJS(t, kvTestConn(t, s)), KVStateConfig{})
		tk1 := toolkit.New(&toolkit.Options{State: state})
		if err := tk1.AddGroup(toolkit.Group{Name: "vault", Description: "Secrets."}); err != nil {
			t.Fatal(err)
		}
		mustAddT(t, tk1, tool("alpha"))
		mustAddT(t, tk1, tool("secret"), toolkit.InGroup("vault"))
		tk2 := toolkit.New(&toolkit.Options{State: state})
		mustAddT(t, tk2, tool("beta"))
		serveKV(t, s, tk1, &WorkerOptions{Instance: "w1"})
		w2 := serveKV(t, s, tk2, &WorkerOptions{Instance: "w2"})
		c := clientKV(t, s)
		if got := schemaNames(t, c, "agent"); got != "reset_tools,alpha,beta" {
			t.Fatalf("before activation: %s", got)
		}
		r := c.Invoke(kvTestCtx(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "agent", Input: map[string]any{"vault": true}})
		if r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools: %+v", r)
		}
		if got := schemaNames(t, c, "agent"); got != "reset_tools,alpha,secret,beta" {
			t.Fatalf("after activation: %s", got)
		}
		if got := schemaNames(t, c, "other"); got != "reset_tools,alpha,beta" {
			t.Fatalf("another session: %s", got)
		}
		// The goodbye of a stopped worker takes its tools off the list.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w2.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		fleetWaitFor(t, "w2 gone", func() bool { return schemaNames(t, c, "agent") == "reset_tools,alpha,secret" })
	})

	t.Run("skills", func(t *testing.T) {
		s := kvTestServer(t)
		tk, set := skillWorker(t, t.TempDir())
		serveKV(t, s, tk, &WorkerOptions{Instance: "w1", Skills: set})
		c := clientKV(t, s)
		got, err := c.SkillInstructions(kvTestCtx(t), "new-session")
		if err != nil {
			t.Fatal(err)
		}
		if want := set.Instructions(nil); got != want || want == "" {
			t.Fatalf("SkillInstructions =\n%s\nthe worker renders\n%s", got, want)
		}
	})

	t.Run("closed client", func(t *testing.T) {
		s := kvTestServer(t)
		c := clientKV(t, s)
		c.Close()
		if _, err := c.Schemas(kvTestCtx(t), "agent"); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("Schemas on a closed client: %v", err)
		}
	})
}

func TestClientBadGroupsBucket(t *testing.T) {
	s := kvTestServer(t)
	if _, err := NewClient(kvTestConn(t, s), &ClientOptions{GroupsBucket: "a.b"}); err == nil || !strings.Contains(err.Error(), `"a.b"`) {
		t.Fatalf("NewClient with an invalid bucket: %v", err)
	}
}

func mustAddT(t *testing.T, tk *toolkit.Toolkit, tool *toolkit.Tool, opts ...toolkit.Option) {
	t.Helper()
	if err := tk.Add(tool, opts...); err != nil {
		t.Fatal(err)
	}
}

func serveKV(t *testing.T, s *server.Server, tk *toolkit.Toolkit, opts *WorkerOptions) *Worker {
	t.Helper()
	w, err := Serve(kvTestConn(t, s), tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		w.Stop(ctx)
	})
	return w
}

func clientKV(t *testing.T, s *server.Server) *Client {
	t.Helper()
	c, err := NewClient(kvTestConn(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
