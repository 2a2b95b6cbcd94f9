package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// askTool elicits a name from its caller and greets it, or says why not.
func askTool() *toolkit.Tool {
	return toolkit.Stream("greet", "Asks the caller for a name.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		res, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{
			"message":         "Who are you?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			return w.Write(toolkit.Text("no answer: " + err.Error()))
		}
		m, _ := res.(map[string]any)
		content, _ := m["content"].(map[string]any)
		return w.Write(toolkit.Text(fmt.Sprintf("%v, %v", m["action"], content["name"])))
	})
}

// TestAskTheCaller: a tool's elicitation reaches the caller's Asker over
// the bus and its answer comes back to the tool; per call, WithAsker wins;
// a caller without one answers that it cannot, and the tool hears so.
func TestAskTheCaller(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	w := serve(t, natstest.Connect(t, s), tk, nil)

	var asked string
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(ctx context.Context, method string, params any) (any, error) {
		asked = method + ": " + params.(map[string]any)["message"].(string)
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "greet"}); r.Text() != "accept, Ada" {
		t.Fatalf("with an asker: %+v", r)
	}
	if asked != "elicitation/create: Who are you?" {
		t.Fatalf("the asker got %q", asked)
	}
	if n := w.Counters(); n.Frames[wire.KindAsk] != 1 || n.Frames[wire.KindFinal] != 1 {
		t.Fatalf("frames counted %v: want one ask and one final", n.Frames)
	}
	ctx := bus.WithAsker(ctxT(t), func(context.Context, string, any) (any, error) { return nil, errors.New("declined by policy") })
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "greet"}); !strings.Contains(r.Text(), "declined by policy") {
		t.Fatalf("per-call asker: %+v", r)
	}

	plain := newClient(t, natstest.Connect(t, s), nil)
	if r := plain.Invoke(ctxT(t), toolkit.ToolCall{Name: "greet"}); !strings.Contains(r.Text(), "cannot answer elicitation/create requests") {
		t.Fatalf("without an asker: %+v", r)
	}
	// In process, nobody to ask without an asker; the context that
	// answers through the bus answers in process too.
	if r := tk.Invoke(ctxT(t), toolkit.ToolCall{ID: "x", Name: "greet"}); !strings.Contains(r.Text(), toolkit.ErrCannotAsk.Error()) {
		t.Fatalf("in process: %+v", r)
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "y", Name: "greet"}); !strings.Contains(r.Text(), "declined by policy") {
		t.Fatalf("in process with the per-call asker: %+v", r)
	}
	ctx = toolkit.WithAsker(ctxT(t), func(ctx context.Context, method string, params any) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Grace"}}, nil
	})
	for name, caller := range map[string]toolkit.Caller{"in process": tk, "through the bus": plain} {
		if r := caller.Invoke(ctx, toolkit.ToolCall{Name: "greet"}); r.Text() != "accept, Grace" {
			t.Errorf("%s with toolkit.WithAsker: %+v", name, r)
		}
	}
}

// TestAskTokensUnguessable: the subject a caller answers a tool's request
// on is the only thing that binds the answer to the request, and every
// caller may publish answers: two requests' tokens share nothing a caller
// that saw one could extend to the other (nuid's tokens share their
// 12-character prefix and step by a fixed increment).
func TestAskTokensUnguessable(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	sniff := natstest.Connect(t, s)
	sub, err := sniff.SubscribeSync(wire.SubjectAnswerPrefix + ">")
	if err != nil {
		t.Fatal(err)
	}
	if err := sniff.Flush(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(context.Context, string, any) (any, error) {
		return map[string]any{"action": "decline"}, nil
	}})
	var tokens []string
	for range 2 {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "greet"}); r.Text() != "decline, <nil>" {
			t.Fatalf("call: %+v", r)
		}
		m, err := sub.NextMsgWithContext(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	}
	if len(tokens[0]) < 22 || tokens[0][:12] == tokens[1][:12] {
		t.Fatalf("answer tokens %q and %q: guessable from each other", tokens[0], tokens[1])
	}
}

// TestAsksOfACallBounded: each ask frame started a goroutine running the
// caller's Asker, however many a worker sent: a worker sending a call's
// ask frames without end held as many goroutines (and, through the MCP
// gateway, open questions to its client) as it liked. The caller answers
// at most bus.MaxAsksPerCall of one call's requests at once; the others
// are answered at once with an error, so none goes unanswered.
func TestAsksOfACallBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	hostile := natstest.Connect(t, s)
	const n = 2000
	answers, err := hostile.SubscribeSync(wire.AnswerSubject("evil", "*"))
	if err != nil {
		t.Fatal(err)
	}
	answers.SetPendingLimits(-1, -1)
	if _, err := hostile.Subscribe(wire.CallSubject("evil", ""), func(m *nats.Msg) {
		var req wire.Request
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		for i := range n {
			b, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindAsk, ID: req.ID, Seq: uint64(i + 1),
				Ask: &wire.Ask{Method: toolkit.MethodElicit, Reply: wire.AnswerSubject("evil", fmt.Sprint(i))}})
			hostile.Publish(m.Reply, b)
		}
		b, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: req.ID, Seq: n + 1, Final: toolkit.Final(req.ID, "", "")})
		hostile.Publish(m.Reply, b)
	}); err != nil {
		t.Fatal(err)
	}
	hostile.Flush()

	release := make(chan struct{})
	var running, most atomic.Int32
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(ctx context.Context, _ string, _ any) (any, error) {
		r := running.Add(1)
		for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
		}
		defer running.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]any{"action": "decline"}, nil
	}})
	c.Invoke(ctxT(t), toolkit.ToolCall{Name: "evil"})
	got := 0
	for ; got < n-bus.MaxAsksPerCall; got++ {
		if _, err := answers.NextMsg(5 * time.Second); err != nil {
			break
		}
	}
	peak := most.Load()
	close(release)
	t.Logf("%d ask frames of one call: %d Askers ran at once, %d answered while they ran", n, peak, got)
	if peak > bus.MaxAsksPerCall {
		t.Errorf("%d Askers of one call ran at once, want at most %d", peak, bus.MaxAsksPerCall)
	}
	if got < n-bus.MaxAsksPerCall {
		t.Errorf("%d of the %d requests beyond the bound were answered", got, n-bus.MaxAsksPerCall)
	}
}

// A worker's request names the subject its answer goes to: the client
// answers only on tools.answer. subjects (never, say, another tool's call
// subject with the caller's permissions), and asks its Asker nothing for
// a request naming another.
func TestAskReplyOnlyToAnswerSubjects(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	var stray atomic.Int32
	if _, err := wnc.Subscribe("tools.call.victim", func(*nats.Msg) { stray.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := wnc.Subscribe("tools.call.hostile", func(m *nats.Msg) {
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		for _, f := range []*wire.Frame{
			{Kind: wire.KindAsk, ID: req.ID, Seq: 1, Ask: &wire.Ask{Method: toolkit.MethodElicit, Params: map[string]any{"message": "?"}, Reply: "tools.call.victim"}},
			{Kind: wire.KindFinal, ID: req.ID, Seq: 2, Final: &toolkit.Response{ID: req.ID, State: toolkit.StateSuccess}},
		} {
			data, _ := wire.Msgpack.Marshal(f)
			wnc.Publish(m.Reply, data)
			time.Sleep(100 * time.Millisecond)
		}
	}); err != nil {
		t.Fatal(err)
	}
	wnc.Flush()
	var asked atomic.Int32
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(context.Context, string, any) (any, error) {
		asked.Add(1)
		return map[string]any{"action": "accept"}, nil
	}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hostile"}); r.State != toolkit.StateSuccess {
		t.Fatalf("final %+v", r)
	}
	time.Sleep(200 * time.Millisecond)
	if n, a := stray.Load(), asked.Load(); n != 0 || a != 0 {
		t.Errorf("%d answers published on tools.call.victim, the Asker asked %d times", n, a)
	}
}
