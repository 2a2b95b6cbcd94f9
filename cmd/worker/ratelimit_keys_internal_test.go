package main

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/toolkit"
)

// A rate limit's max_keys reaches the middleware: with one bucket kept,
// a second session's call forgets the first's, which starts again with a
// full bucket. Without it (the default, 65536 buckets) the first
// session's bucket is still empty.
func TestRateLimitMaxKeys(t *testing.T) {
	for _, tt := range []struct {
		maxKeys int
		want    toolkit.State // of session a's second call
	}{
		{0, toolkit.StateError},
		{1, toolkit.StateSuccess},
	} {
		tk := toolkit.New(nil)
		tk.Use(rateLimit(config.RateLimit{Key: config.KeySession, Rate: 1e-6, Burst: 1, MaxKeys: tt.maxKeys}))
		if err := tk.Add(toolkit.Raw("echo", "E.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text("ok"))
		})); err != nil {
			t.Fatal(err)
		}
		for i, s := range []string{"a", "b", "a"} {
			r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c", Name: "echo", Session: s})
			want := toolkit.StateSuccess
			if i == 2 {
				want = tt.want
			}
			if r.State != want {
				t.Errorf("max_keys %d: call %d (session %s) ended %s/%s, want %s", tt.maxKeys, i+1, s, r.State, r.Code, want)
			}
		}
	}
}
