package toolkit_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestOnRefused: Options.OnRefused hears of the calls Dispatch answers
// without running the middleware chain (unknown tool, inactive group,
// invalid input) and of those a transport reports (Refused), not of calls
// that ran, failed or not.
func TestOnRefused(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	tk := toolkit.New(&toolkit.Options{OnRefused: func(_ context.Context, call toolkit.ToolCall, r *toolkit.Response) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, call.ID+":"+string(r.Code))
	}})
	var chained []string
	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			chained = append(chained, call.ID)
			return next(ctx, call, w)
		}
	})
	if err := tk.AddGroup(toolkit.Group{Name: "lab", Description: "Lab tools."}); err != nil {
		t.Fatal(err)
	}
	type in struct {
		Text string `json:"text"`
	}
	for _, tool := range []*toolkit.Tool{
		toolkit.Func("echo", "Echo.", func(_ context.Context, in in) (string, error) { return in.Text, nil }),
		toolkit.Func("fail", "Fail.", func(context.Context, in) (string, error) { return "", errors.New("boom") }),
	} {
		if err := tk.Add(tool); err != nil {
			t.Fatal(err)
		}
	}
	if err := tk.Add(toolkit.Func("probe", "Probe.", func(context.Context, in) (string, error) { return "", nil }), toolkit.InGroup("lab")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []toolkit.ToolCall{
		{ID: "ok", Name: "echo", Input: map[string]any{"text": "x"}},
		{ID: "failed", Name: "fail", Input: map[string]any{"text": "y"}},
		{ID: "unknown", Name: "nope"},
		{ID: "inactive", Name: "probe", Session: "s1"},
		{ID: "badinput", Name: "echo", Input: map[string]any{"text": 5}},
	} {
		tk.Invoke(ctx, c)
	}
	tk.Refused(ctx, toolkit.ToolCall{ID: "transport", Name: "echo"}, toolkit.Final("transport", toolkit.CodeOverloaded, "OverloadedError"))
	want := []string{"unknown:not_found", "inactive:group_inactive", "badinput:invalid_input", "transport:overloaded"}
	if len(heard) != len(want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
	for i := range want {
		if heard[i] != want[i] {
			t.Errorf("heard %v, want %v", heard, want)
			break
		}
	}
	if len(chained) != 2 || chained[0] != "ok" || chained[1] != "failed" {
		t.Errorf("the chain ran for %v, want [ok failed]", chained)
	}
}
