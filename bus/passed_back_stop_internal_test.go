package bus

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopAnswersCallsPassedBack: calls passed on just before a stop
// (their tool removed meanwhile) and served by no worker are answered
// not_found by the stopping worker: Stop takes in the no-responders
// statuses on their way before it ends their subscription. It ended it
// at once, dropping a status not yet handed to its callback, whose
// caller waited for its stall timeout (worker_lost).
func TestStopAnswersCallsPassedBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w"})
	const n = 2
	held, release := make(chan struct{}, n), make(chan struct{})
	w.beforeDispatch = func(*sender) {
		held <- struct{}{}
		<-release
	}
	stopped := make(chan struct{})
	var first sync.Once
	inBack := make(chan struct{})
	w.onPassedBack = func() {
		first.Do(func() {
			close(inBack)
			// The other status waits behind this one; the stop comes.
			natstest.WaitFor(t, "the other status to wait, and the stop", func() bool {
				w.passed.mu.Lock()
				sub := w.passed.sub
				w.passed.mu.Unlock()
				pending, _, _ := sub.Pending()
				return pending >= 1 && (sub.IsDraining() || isClosed(stopped))
			})
		})
	}
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{StallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	results := make(chan *toolkit.Response, n)
	for i := range n {
		go func() {
			results <- c.Invoke(t.Context(), toolkit.ToolCall{ID: "c" + strconv.Itoa(i), Name: "echo", Input: map[string]any{"text": "x"}})
		}()
	}
	for range n {
		<-held
	}
	tk.Remove("echo")
	close(release)
	<-inBack
	natstest.WaitFor(t, "both calls passed on", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.calls) == 0
	})
	w.Stop(context.Background())
	close(stopped)
	for range n {
		if r := <-results; r.Code != toolkit.CodeNotFound {
			t.Fatalf("%s %s %q, want not_found", r.State, r.Code, r.Text())
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
