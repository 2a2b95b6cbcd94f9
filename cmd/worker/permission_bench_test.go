package main_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkPermissionCheck is one echo call through the bus to a worker
// process, without and with the permission checks (the session's policy
// read from KV on every call; echo is read-only, so it is allowed).
func BenchmarkPermissionCheck(b *testing.B) {
	for _, checked := range []bool{false, true} {
		name := "unchecked"
		var args []string
		if checked {
			name = "checked"
			cfg := filepath.Join(b.TempDir(), "worker.yaml")
			mustWrite(b, cfg, "permissions:\n  mode: default\n")
			args = []string{"--config", cfg}
		}
		b.Run(name, func(b *testing.B) {
			w := startWorker(b, args...)
			nc, err := nats.Connect(w.url)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			c, err := bus.NewClient(nc, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				r := c.Invoke(ctx, toolkit.ToolCall{ID: "b" + strconv.Itoa(i), Name: "echo", Session: "bench", Input: map[string]any{"text": "hi"}})
				if r.State != toolkit.StateSuccess {
					b.Fatalf("echo: %s %s %s", r.State, r.Code, r.Text())
				}
			}
		})
	}
}
