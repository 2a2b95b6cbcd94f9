package bus

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// clientGoroutines counts the goroutines running the client's code.
func clientGoroutines() (int, string) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var first string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "bus.(*Client)") || strings.Contains(g, "bus.(*inbox)") {
			n++
			if first == "" {
				first = g
			}
		}
	}
	return n, first
}

// TestCloseDuringEveryKindOfCall: a client closed while many goroutines
// call it (streaming calls, requests to the caller, durable calls, quick
// calls, cancels, listings, fleet and result lookups) ends every call
// with exactly one final, panics nowhere, and leaves no goroutine of its
// own behind.
func TestCloseDuringEveryKindOfCall(t *testing.T) {
	t.Run("client", func(t *testing.T) { closeDuringCalls(t, false) })
	t.Run("connection", func(t *testing.T) { closeDuringCalls(t, true) })
}

func closeDuringCalls(t *testing.T, conn bool) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	js := natstest.JS(t, wnc)
	tk := toolkit.New(nil)
	add := func(tool *toolkit.Tool, opts ...toolkit.Option) {
		if err := tk.Add(tool, opts...); err != nil {
			t.Fatal(err)
		}
	}
	add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{ Text string }) (string, error) { return in.Text, nil }), toolkit.ReadOnly())
	add(toolkit.Raw("drip", "Writes until cancelled.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for i := 0; ; i++ {
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
	}))
	add(toolkit.Raw("ask", "Asks its caller.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		w.Write(toolkit.Text("asking"))
		v, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": "ok?"})
		if err != nil {
			return err
		}
		return w.Write(toolkit.Text(fmt.Sprint(v)))
	}))
	add(toolkit.Func("hold", "Waits for its end.", func(ctx context.Context, in struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	w, err := Serve(wnc, tk, &WorkerOptions{Instance: "w1", AbandonAfter: 200 * time.Millisecond,
		Durable: &DurableOptions{JetStream: js},
		Results: &ResultsOptions{JetStream: js}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// With the caller's connection gone, its cancels never came: the
		// tools run until the stop gives up on them.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		w.Stop(ctx)
	})

	before, _ := clientGoroutines()
	asking := make(chan struct{}, 64)
	cnc := natstest.Connect(t, s)
	c, err := NewClient(cnc, &ClientOptions{StallTimeout: time.Minute,
		Asker: func(ctx context.Context, method string, params any) (any, error) {
			asking <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fleet(natstest.Ctx(t)); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	var streaming, durable atomic.Int32
	var problems sync.Map
	call := func(name string, call toolkit.ToolCall, breakAfter int) {
		defer wg.Done()
		finals, chunks := 0, 0
		for ev := range c.Call(context.Background(), call) {
			if ev.Chunk != nil {
				chunks++
				if chunks == 1 && name == "drip" {
					streaming.Add(1)
				}
				if breakAfter > 0 && chunks >= breakAfter {
					return
				}
			}
			if ev.Final != nil {
				finals++
			}
		}
		if finals != 1 {
			problems.Store(fmt.Sprintf("%s %s: %d finals", name, call.ID, finals), true)
		}
	}
	for i := range 8 {
		wg.Add(1)
		go call("drip", toolkit.ToolCall{ID: fmt.Sprintf("drip-%d", i), Name: "drip"}, 0)
	}
	for i := range 4 {
		wg.Add(1)
		go call("drip", toolkit.ToolCall{ID: fmt.Sprintf("dripbreak-%d", i), Name: "drip"}, 1000000)
	}
	for i := range 4 {
		wg.Add(1)
		go call("ask", toolkit.ToolCall{ID: fmt.Sprintf("ask-%d", i), Name: "ask"}, 0)
	}
	for i := range 4 {
		wg.Add(1)
		go func() {
			durable.Add(1)
			call("hold", toolkit.ToolCall{ID: fmt.Sprintf("hold-%d", i), Name: "hold", Durable: true}, 0)
		}()
	}
	stop := make(chan struct{})
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r := c.Invoke(context.Background(), toolkit.ToolCall{Name: "echo", Input: map[string]any{"Text": "x"}, KeepResult: n%2 == 0})
				if r == nil {
					problems.Store("echo: no final", true)
					return
				}
				c.Cancel(fmt.Sprintf("drip-%d", (i+n)%8))
				c.Result(context.Background(), r.ID)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				c.List(ctx, "")
				c.SessionSchemas(ctx, "s", 0)
				c.Fleet(ctx)
				cancel()
			}
		}()
	}
	natstest.WaitFor(t, "the calls to stream and ask", func() bool { return streaming.Load() >= 8 && len(asking) >= 4 })
	if conn {
		cnc.Close()
	} else if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(natstest.Guard):
		buf := make([]byte, 1<<20)
		t.Fatalf("calls still running after Close:\n%s", buf[:runtime.Stack(buf, true)])
	}
	problems.Range(func(k, _ any) bool {
		t.Error(k)
		return true
	})
	c.Close()
	deadline := time.Now().Add(natstest.Guard)
	for {
		n, g := clientGoroutines()
		if n <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the client still run after Close and its calls ended, e.g.\n%s", n-before, g)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
