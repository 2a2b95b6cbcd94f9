package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

func schemaNames(t *testing.T, c *Client, session string) string {
	t.Helper()
	schemas, err := c.SessionSchemas(natstest.Ctx(t), session, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range schemas {
		names = append(names, s.Function.Name)
	}
	return strings.Join(names, ",")
}

// Client.SessionSchemas lists the tools of every worker (each announces
// itself from Serve), with the session's groups read from the KV bucket at
// the revision the client saw; a worker's Stop takes its tools off the
// list; without a bucket, the groups announced active apply.
func TestClientSessionSchemasFleetWide(t *testing.T) {
	tool := func(name string) *toolkit.Tool {
		return toolkit.Func(name, "The "+name+" tool.", func(context.Context, struct{}) (string, error) { return name, nil })
	}
	t.Run("no bucket", func(t *testing.T) {
		s := natstest.Server(t)
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
			t.Fatalf("SessionSchemas = %s, want both workers' tools", got)
		}
		// List still asks one worker.
		reply, err := c.List(natstest.Ctx(t), "agent")
		if err != nil {
			t.Fatal(err)
		}
		if reply.Worker == "" {
			t.Fatalf("List reply without a worker: %+v", reply)
		}
	})

	t.Run("groups from the bucket", func(t *testing.T) {
		s := natstest.Server(t)
		state := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil)
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
		r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "agent", Input: map[string]any{"vault": true}})
		if r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools: %+v", r)
		}
		if got := schemaNames(t, c, "agent"); got != "reset_tools,alpha,beta,secret" {
			t.Fatalf("after activation: %s", got)
		}
		if got := schemaNames(t, c, "other"); got != "reset_tools,alpha,beta" {
			t.Fatalf("another session: %s", got)
		}
		if active, err := c.ActiveGroups(natstest.Ctx(t), "agent", 0); err != nil || !slices.Equal(active, []string{"vault"}) {
			t.Fatalf("ActiveGroups = %v, %v", active, err)
		}
		short, cancel := context.WithTimeout(natstest.Ctx(t), 100*time.Millisecond)
		defer cancel()
		if _, err := c.SessionSchemas(short, "agent", 1<<40); !errors.Is(err, ErrStaleGroupState) {
			t.Fatalf("SessionSchemas at an unreachable revision: %v, want ErrStaleGroupState", err)
		}
		// The goodbye of a stopped worker takes its tools off the list.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w2.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, "w2 gone", func() bool { return schemaNames(t, c, "agent") == "reset_tools,alpha,secret" })
	})

	t.Run("filter and meta", func(t *testing.T) {
		s := natstest.Server(t)
		tk := toolkit.New(nil)
		mustAddT(t, tk, tool("alpha"))
		mustAddT(t, tk, tool("hidden"))
		serveKV(t, s, tk, &WorkerOptions{Instance: "w1", Meta: map[string]func() any{"flavour": func() any { return "sour" }}})
		c, err := NewClient(natstest.Conn(t, s), &ClientOptions{Filter: func(ctx context.Context, f *discovery.Fleet, session string, schemas []toolkit.FunctionSchema) ([]toolkit.FunctionSchema, error) {
			var flavour string
			if ok, err := f.Instances()[0].DecodeMeta("flavour", &flavour); !ok || err != nil || flavour != "sour" {
				return nil, fmt.Errorf("meta %q %v %v", flavour, ok, err)
			}
			return slices.DeleteFunc(schemas, func(s toolkit.FunctionSchema) bool { return s.Function.Name == "hidden" }), nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if got := schemaNames(t, c, "agent"); got != "alpha" {
			t.Fatalf("filtered = %s, want alpha", got)
		}
	})

	t.Run("closed client", func(t *testing.T) {
		s := natstest.Server(t)
		c := clientKV(t, s)
		c.Close()
		if _, err := c.SessionSchemas(natstest.Ctx(t), "agent", 0); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("SessionSchemas on a closed client: %v", err)
		}
	})
}

func TestClientBadGroupsBucket(t *testing.T) {
	s := natstest.Server(t)
	if _, err := NewClient(natstest.Conn(t, s), &ClientOptions{GroupsBucket: "a.b"}); err == nil || !strings.Contains(err.Error(), `"a.b"`) {
		t.Fatalf("NewClient with an invalid bucket: %v", err)
	}
}

func mustAddT(t *testing.T, tk *toolkit.Toolkit, tool *toolkit.Tool, opts ...toolkit.Option) {
	t.Helper()
	if err := tk.Add(tool, opts...); err != nil {
		t.Fatal(err)
	}
}

// serve serves tk on nc; the worker stops when the test ends, its calls
// given natstest.Guard to finish before they are interrupted. Cleanups run
// last first: one the test adds after serve (releasing a held tool) runs
// before this stop, which waits for the calls.
func serve(t *testing.T, nc *nats.Conn, tk *toolkit.Toolkit, opts *WorkerOptions) *Worker {
	t.Helper()
	w, err := Serve(nc, tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), natstest.Guard)
		defer cancel()
		w.Stop(ctx)
	})
	return w
}

// serveKV is serve on an in-process connection to s.
func serveKV(t *testing.T, s *server.Server, tk *toolkit.Toolkit, opts *WorkerOptions) *Worker {
	t.Helper()
	return serve(t, natstest.Conn(t, s), tk, opts)
}

func clientKV(t *testing.T, s *server.Server) *Client {
	t.Helper()
	c, err := NewClient(natstest.Conn(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
