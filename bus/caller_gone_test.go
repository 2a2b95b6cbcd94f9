package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// goneTool streams a chunk every 100ms until its context ends, or until
// it has run for d (0: for ever); it reports why it ended.
func goneTool(name string, d time.Duration, ended chan<- error) *toolkit.Tool {
	return toolkit.Raw(name, "Streams until cancelled.", map[string]any{"type": "object", "properties": map[string]any{}},
		func(ctx context.Context, _ *toolkit.Call, w toolkit.Writer) error {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			var until <-chan time.Time
			if d > 0 {
				until = time.After(d)
			}
			for {
				select {
				case <-ctx.Done():
					ended <- context.Cause(ctx)
					return ctx.Err()
				case <-until:
					ended <- nil
					return w.Write(toolkit.Text("done"))
				case <-tick.C:
					if err := w.Write(toolkit.Text(".")); err != nil {
						ended <- err
						return err
					}
				}
			}
		})
}

// A caller whose process ended (its connection closed without a cancel)
// left its call of a tool that streams for ever running on the worker,
// holding its slot, for ever.
func TestCallerGoneCancelsItsCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	ended := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, goneTool("forever", 0, ended))
	w := serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{CallerGoneAfter: 2 * time.Second})
	cnc := natstest.Connect(t, s)
	c := newClient(t, cnc, nil)
	started := make(chan struct{})
	go func() {
		first := true
		for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "orphan", Name: "forever"}) {
			if ev.Chunk != nil && first {
				first = false
				close(started)
			}
		}
	}()
	<-started
	cnc.Close() // the caller's process ends: no cancel
	select {
	case err := <-ended:
		if !errors.Is(err, toolkit.ErrCallerGone) {
			t.Fatalf("the tool ended with %v, want ErrCallerGone", err)
		}
	case <-time.After(guard):
		t.Fatal("the call of a caller that is gone still runs")
	}
	if n := w.Counters().CallersGone; n != 1 {
		t.Errorf("CallersGone %d, want 1", n)
	}
}

// A call that keeps its final is the caller's to read back later
// (Client.Result): it runs to its end though its caller is gone.
func TestCallerGoneKeptCallRuns(t *testing.T) {
	s := natstest.Embedded(t, true)
	ended := make(chan error, 1)
	tk := toolkit.New(nil)
	// Long enough that a call not kept would be cancelled: probes from
	// 1s, gone for 3s at the least (CallerGoneAfter 1s, three probes).
	mustAdd(t, tk, goneTool("job", 7*time.Second, ended))
	wnc := natstest.Connect(t, s)
	serve(t, wnc, tk, &bus.WorkerOptions{CallerGoneAfter: time.Second, Results: &bus.ResultsOptions{JetStream: natstest.JS(t, wnc)}})
	cnc := natstest.Connect(t, s)
	c := newClient(t, cnc, nil)
	started := make(chan struct{})
	go func() {
		first := true
		for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "kept-job", Name: "job", KeepResult: true}) {
			if ev.Chunk != nil && first {
				first = false
				close(started)
			}
		}
	}()
	<-started
	cnc.Close()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the kept call ended with %v, want its own end", err)
		}
	case <-time.After(guard):
		t.Fatal("the kept call did not end")
	}
	rc := newClient(t, natstest.Connect(t, s), nil)
	for deadline := time.Now().Add(guard); ; time.Sleep(50 * time.Millisecond) {
		r := rc.Result(ctxT(t), "kept-job")
		if r.Code != toolkit.CodeNotFound {
			if r.State != toolkit.StateSuccess {
				t.Fatalf("kept final %s %q, want success", r.Code, r.Text())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kept final: %s", r.Text())
		}
	}
}

// A caller away for less than CallerGoneAfter (a reconnect) keeps its
// call, also when it goes away again later: one probe that reaches its
// inbox starts the count again.
func TestCallerBackInTimeKeepsItsCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	ended := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, goneTool("forever", 0, ended))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{CallerGoneAfter: 5 * time.Second})
	nc := natstest.Connect(t, s)
	body, err := msgpack.Marshal(&wire.Request{ID: "away", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("forever", ""), Reply: inbox, Data: body}); err != nil {
		t.Fatal(err)
	}
	// probes waits for n frames that probe the inbox (a reply subject).
	probes := func(n int) {
		t.Helper()
		for seen := 0; seen < n; {
			m, err := sub.NextMsg(guard)
			if err != nil {
				t.Fatalf("after %d probes: %v", seen, err)
			}
			f, err := decodeFrame(m)
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind == wire.KindFinal {
				t.Fatalf("final %s %q while the caller is back", f.Final.Code, f.Final.Text())
			}
			if m.Reply != "" {
				seen++
			}
		}
	}
	// away leaves the inbox for 2.5s: the probes meanwhile find it gone.
	away := func() {
		t.Helper()
		sub.Unsubscribe()
		nc.Flush()
		time.Sleep(2500 * time.Millisecond)
		if sub, err = nc.SubscribeSync(inbox); err != nil {
			t.Fatal(err)
		}
		nc.Flush()
	}
	probes(1)
	away()
	// Back for four probes, away again: 6s or more after the caller was
	// first found gone, which would end the call had the probes that
	// reached it not started the count again.
	probes(4)
	away()
	probes(2)
	select {
	case err := <-ended:
		t.Fatalf("the call ended (%v) though its caller came back", err)
	default:
	}
	cancel := &nats.Msg{Subject: wire.CancelSubject("", "away"), Header: nats.Header{wire.HeaderVersion: {wire.Version}}}
	if err := nc.PublishMsg(cancel); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, toolkit.ErrCallerCancelled) {
		t.Errorf("the tool ended with %v, want the caller's cancel", err)
	}
}

// An ask's answer token is base64url, which has '-' in its alphabet
// (about three tokens in ten hold one): the worker took such a token for
// a probe's (<token>-<n>), found no call probing under it and dropped the
// caller's answer, so the tool waited for its context to end.
func TestCallerGoneAnswersWithADashReachTheirAsk(t *testing.T) {
	s := natstest.Embedded(t, false)
	const asks = 40 // one token or more with a '-': all but certain
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("asker", "Asks its caller again and again.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for i := range asks {
			actx, cancel := context.WithTimeout(ctx, guard) // a lost answer ends it; a slow one does not
			_, err := toolkit.Ask(actx, w, toolkit.MethodElicit, map[string]any{"message": "again?"})
			cancel()
			if err != nil {
				return w.Write(toolkit.Text(fmt.Sprintf("ask %d: %v", i, err)))
			}
		}
		return w.Write(toolkit.Text("all answered"))
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(context.Context, string, any) (any, error) {
		return map[string]any{"action": "accept"}, nil
	}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "asker"}); r.Text() != "all answered" {
		t.Fatalf("%s %q", r.Code, r.Text())
	}
}

// A negative CallerGoneAfter turns the probes off: no frame carries a
// reply subject.
func TestCallerGoneProbesOff(t *testing.T) {
	s := natstest.Embedded(t, false)
	ended := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, goneTool("forever", 0, ended))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{CallerGoneAfter: -1})
	nc := natstest.Connect(t, s)
	body, err := msgpack.Marshal(&wire.Request{ID: "off", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("forever", ""), Reply: inbox, Data: body}); err != nil {
		t.Fatal(err)
	}
	// With the probes on, one frame a second would carry a reply subject
	// (the tool streams a chunk every 100ms: 30 frames take 3s).
	for frames := 0; frames < 30; frames++ {
		m, err := sub.NextMsg(guard)
		if err != nil {
			t.Fatalf("after %d frames: %v", frames, err)
		}
		if m.Reply != "" {
			t.Fatalf("a frame probed the caller (reply %s) with the probes off", m.Reply)
		}
	}
	cancel := &nats.Msg{Subject: wire.CancelSubject("", "off"), Header: nats.Header{wire.HeaderVersion: {wire.Version}}}
	if err := nc.PublishMsg(cancel); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, toolkit.ErrCallerCancelled) {
		t.Errorf("the tool ended with %v, want the caller's cancel", err)
	}
}
