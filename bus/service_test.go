package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// gatherService sends a services protocol request and collects the
// answers that arrive until want of them did (or the guard passes).
func gatherService[T any](t *testing.T, nc *nats.Conn, subject string, want int) []T {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		t.Fatal(err)
	}
	var out []T
	for len(out) < want {
		m, err := sub.NextMsg(guard)
		if err != nil {
			t.Fatalf("%s: %d of %d answers: %v", subject, len(out), want, err)
		}
		var v T
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatalf("%s: %v: %s", subject, err, m.Data)
		}
		out = append(out, v)
	}
	return out
}

// TestServicesProtocol: workers answer $SRV.PING, INFO and STATS as
// instances of the service toolbus, one endpoint per tool, with the
// counts of the calls they answered.
func TestServicesProtocol(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	mustAdd(t, tk, toolkit.Func("fail", "Fails.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("it broke")
	}))
	w1 := serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1", Version: "v1.2.3"})
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w2"})
	nc := natstest.Connect(t, s)

	pings := gatherService[micro.Ping](t, nc, "$SRV.PING", 2)
	ids := []string{pings[0].ID, pings[1].ID}
	if !(ids[0] == "w1" && ids[1] == "w2" || ids[0] == "w2" && ids[1] == "w1") || pings[0].Name != "toolbus" || pings[0].Type != micro.PingResponseType {
		t.Fatalf("pings: %+v", pings)
	}
	info := gatherService[micro.Info](t, nc, "$SRV.INFO.toolbus.w1", 1)[0]
	if info.ID != "w1" || info.Version != "1.2.3" || info.Metadata["queue"] != bus.DefaultQueue || len(info.Endpoints) != 2 ||
		info.Endpoints[0].Name != "echo" || info.Endpoints[0].Subject != "tools.call.echo" || info.Endpoints[0].QueueGroup != bus.DefaultQueue ||
		info.Endpoints[1].Subject != "tools.call.fail" {
		t.Fatalf("info: %+v", info)
	}

	c := newClient(t, natstest.Connect(t, s), nil)
	w2 := gatherService[micro.Ping](t, nc, "$SRV.PING.toolbus.w2", 1)[0]
	if w2.ID != "w2" {
		t.Fatalf("ping w2: %+v", w2)
	}
	for range 3 {
		c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}})
	}
	c.Invoke(ctxT(t), toolkit.ToolCall{Name: "fail"})
	stats := gatherService[micro.Stats](t, nc, "$SRV.STATS.toolbus", 2)
	var echoes, errs, fails int
	var last string
	for _, st := range stats {
		if st.Type != micro.StatsResponseType || st.Started.IsZero() || len(st.Endpoints) != 2 {
			t.Fatalf("stats: %+v", st)
		}
		for _, e := range st.Endpoints {
			switch e.Name {
			case "echo":
				echoes += e.NumRequests
				errs += e.NumErrors
			case "fail":
				fails += e.NumRequests
				errs += e.NumErrors
				if e.NumErrors > 0 {
					last = e.LastError
					if e.ProcessingTime <= 0 || e.AverageProcessingTime <= 0 {
						t.Errorf("fail: no processing time: %+v", e)
					}
				}
			}
		}
	}
	if echoes != 3 || fails != 1 || errs != 1 || !strings.HasPrefix(last, "tool_error: ") || !strings.Contains(last, "it broke") {
		t.Fatalf("stats: %d echoes, %d fails, %d errors, last error %q", echoes, fails, errs, last)
	}

	// A stopped worker no longer answers.
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := w1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Request("$SRV.PING.toolbus.w1", nil, 200*time.Millisecond); !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("ping of a stopped worker: %v", err)
	}
}

// TestWorkerCounters: the worker counts the frames and bytes it sends by
// kind, the running calls a cancel or their deadline ended and the calls
// it answered overloaded.
func TestWorkerCounters(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started := make(chan struct{}, 1)
	seen := make(chan struct{})
	mustAdd(t, tk, toolkit.Stream("drip", "Writes three chunks, each once the last reached the caller.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for range 3 {
			if err := w.Write(toolkit.Text("x")); err != nil {
				return err
			}
			select {
			case <-seen:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}))
	mustAdd(t, tk, toolkit.Func("wait", "Waits until cancelled.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	w := serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{MaxInFlight: 1})
	c := newClient(t, natstest.Connect(t, s), nil)
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "drip"}) {
		if ev.Chunk != nil {
			seen <- struct{}{}
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final == nil || final.Text() != "xxx" {
		t.Fatalf("drip: %+v", final)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{Name: "wait"}) }()
	<-started
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "wait"}); r.Code != toolkit.CodeOverloaded {
		t.Fatalf("a call past MaxInFlight: %+v", r)
	}
	cancel()
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("cancelled: %+v", r)
	}
	// A deadline the worker enforces itself (Toolbus-Timeout) counts too,
	// with no cancel from the caller.
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	m, err := nc.RequestMsg(&nats.Msg{Subject: wire.CallSubject("wait", ""), Header: nats.Header{wire.HeaderTimeout: {"50"}}, Data: data}, guard)
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil || f.Final == nil || f.Final.Code != toolkit.CodeTimeout {
		t.Fatalf("a call past its Toolbus-Timeout: %v %+v", err, f)
	}
	n := w.Counters()
	if n.Frames[wire.KindChunk] != 3 || n.Frames[wire.KindFinal] != 4 || n.Cancelled != 2 || n.Overloaded != 1 || n.SentBytes == 0 || n.JetStreamErrors != 0 {
		t.Fatalf("counters: %+v", n)
	}
}
