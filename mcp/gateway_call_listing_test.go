package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayCallWhileListChanges: a tools/call of a fleet tool gets the
// fleet's answer while the session's list is being changed to include it.
// The list tools/list answers is stored before the go-sdk server's tools
// change (TestGatewayListChangedStale), and a call of a tool the list had
// went to the go-sdk server, which did not have it yet: a JSON-RPC
// "unknown tool" error instead of the result. Clients call without
// listing first in a loop while a worker with 180 large tools joins.
func TestGatewayCallWhileListChanges(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	waitTracked(t, g, 1)

	tk := newWorkerToolkit(t, f.srv)
	run := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ok"))
	}
	long := strings.Repeat("A long parameter description. ", 150) // ~4.5 KB per tool
	const n = 180
	for i := range n {
		schema := map[string]any{"type": "object", "properties": map[string]any{
			"p": map[string]any{"type": "string", "description": long}}}
		if err := tk.Add(toolkit.Raw(fmt.Sprintf("late%03d", i), "A tool.", schema, run)); err != nil {
			t.Fatal(err)
		}
	}
	last := fmt.Sprintf("late%03d", n-1)

	ctx, cancel := context.WithTimeout(context.Background(), 4*guardTimeout)
	defer cancel()
	var listed atomic.Bool // the session's server has the last tool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	done := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: last, Arguments: map[string]any{}})
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
				} else if !res.IsError && listed.Load() {
					return
				}
			}
		}()
	}
	serveWorker(t, f.srv, tk, "w2")
	for deadline := time.Now().Add(2 * guardTimeout); ; time.Sleep(10 * time.Millisecond) {
		s := g.live()[0]
		s.mu.Lock()
		_, has := s.tools[last]
		s.mu.Unlock()
		if has {
			listed.Store(true)
			break
		}
		if time.Now().After(deadline) {
			close(done)
			t.Fatal("the session never had the new worker's tools")
		}
	}
	wg.Wait()
	close(done)
	if len(failures) > 0 {
		t.Errorf("%d calls failed while the list changed, e.g. %s", len(failures), failures[0])
	}
}
