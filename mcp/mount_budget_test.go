package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// bigTools are n tools of about 100 KB each (their descriptions), named
// prefix0, prefix1, …: five take most of MaxServerToolBytes.
func bigTools(prefix string, n int) []*sdk.Tool {
	var tools []*sdk.Tool
	for i := range n {
		tools = append(tools, &sdk.Tool{Name: fmt.Sprint(prefix, i), Description: strings.Repeat("d", 100_000),
			InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return tools
}

func smallTool(name string) *sdk.Tool {
	return &sdk.Tool{Name: name, Description: "A small tool.", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

// listingServer serves the tools list() returns at each listing.
func listingServer(t *testing.T, list func() []*sdk.Tool) string {
	t.Helper()
	srv := newTestServer(nil)
	answerLists(srv, func(int64) *sdk.ListToolsResult { return &sdk.ListToolsResult{Tools: list()} })
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// workerTool stands for a worker's own tools (the builtin ones): 64 KB.
func workerTool(t *testing.T, tk *toolkit.Toolkit) {
	t.Helper()
	err := tk.Add(toolkit.Raw("own", strings.Repeat("o", 64_000), map[string]any{"type": "object", "properties": map[string]any{}},
		func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
}

// budgetErrors returns the error records of log that say a server's
// tools were left out for want of room in the announcement.
func budgetErrors(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			continue
		}
		if rec["level"] == "ERROR" && strings.Contains(fmt.Sprint(rec["msg"]), "no room") {
			out = append(out, rec)
		}
	}
	return out
}

// Two mounted servers, each within MaxServerToolBytes, made together an
// announcement over the NATS server's max_payload (1 MiB): the worker
// mounting them could not start (bus.Serve failed). The servers mounted
// together now share Options.MaxToolBytes: the first server's tools are
// all served, the second's that fit in what is left too, and the rest
// are left out with an error naming the server and the sizes.
func TestMountedServersFitTheAnnouncement(t *testing.T) {
	urlA := listingServer(t, func() []*sdk.Tool { return bigTools("a", 5) })
	urlB := listingServer(t, func() []*sdk.Tool { return append(bigTools("b", 5), smallTool("small")) })
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	workerTool(t, tk)
	var log natstest.Buffer
	servers, err := Mount(testCtx(t), tk, []ServerConfig{
		{Name: "a", Transport: TransportStreamableHTTP, URL: urlA},
		{Name: "b", Transport: TransportStreamableHTTP, URL: urlB},
	}, &Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Close() })
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatalf("the worker mounting two servers of about 500 KB of tools each cannot start: %v", err)
	}
	defer w.Stop(context.Background())

	a, _ := servers.Get("a")
	b, _ := servers.Get("b")
	if got := a.Tools(); len(got) != 5 {
		t.Errorf("server a: registered %v, want its 5 tools", got)
	}
	if got := b.Tools(); !slices.Equal(got, []string{"mcp__b__small"}) {
		t.Errorf("server b: registered %v, want mcp__b__small alone (the rest has no room)", got)
	}
	errs := budgetErrors(t, log.String())
	if len(errs) != 1 {
		t.Fatalf("want one error for server b's tools left out, got %d:\n%s", len(errs), log.String())
	}
	rec := errs[0]
	if rec["mcp_server"] != "b" || rec["tools_left_out"] != 5.0 {
		t.Errorf("the error does not name server b and its 5 tools left out: %v", rec)
	}
	for _, k := range []string{"bytes_left_out", "room", "limit", "other_servers_bytes"} {
		if n, ok := rec[k].(float64); !ok || n <= 0 {
			t.Errorf("the error lacks %s: %v", k, rec)
		}
	}
}

// A server that grows at a re-listing takes only what the other
// servers leave: its growth was registered, the announcement went over
// max_payload, and the fleet kept hearing the last announcement that fit,
// without the tools registered since (and a restarted worker could not
// start). Its new tools that fit are announced now, and the others'
// tools stay.
func TestRelistedServerFitsTheAnnouncement(t *testing.T) {
	var grown atomic.Bool
	urlA := listingServer(t, func() []*sdk.Tool {
		if grown.Load() {
			return append(bigTools("a", 5), smallTool("small"), smallTool("small2"))
		}
		return []*sdk.Tool{smallTool("small")}
	})
	urlB := listingServer(t, func() []*sdk.Tool { return bigTools("b", 5) })
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	workerTool(t, tk)
	var log natstest.Buffer
	servers, err := Mount(testCtx(t), tk, []ServerConfig{
		{Name: "a", Transport: TransportStreamableHTTP, URL: urlA},
		{Name: "b", Transport: TransportStreamableHTTP, URL: urlB},
	}, &Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Close() })
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	fleet, err := discovery.NewFleet(testCtx(t), natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()

	grown.Store(true)
	a, _ := servers.Get("a")
	if err := a.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the fleet to hear of a's new small tool", func() bool {
		_, ok := fleet.Tool("mcp__a__small2")
		return ok
	})
	b, _ := servers.Get("b")
	if got := b.Tools(); len(got) != 5 {
		t.Errorf("server b: registered %v, want its 5 tools", got)
	}
	for _, n := range b.Tools() {
		if _, ok := fleet.Tool(n); !ok {
			t.Errorf("the fleet does not hear of %s", n)
		}
	}
	if errs := budgetErrors(t, log.String()); len(errs) == 0 || errs[len(errs)-1]["mcp_server"] != "a" {
		t.Errorf("no error for server a's tools left out:\n%s", log.String())
	}
	// A worker started now on the same tools starts.
	w2, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatalf("a worker with these tools cannot start: %v", err)
	}
	w2.Stop(context.Background())
}

// When a server's tools shrink, a server whose tools were left out for
// want of room lists them again and takes the room freed.
func TestFreedRoomRelistsLeftOut(t *testing.T) {
	var shrunk atomic.Bool
	urlA := listingServer(t, func() []*sdk.Tool {
		if shrunk.Load() {
			return []*sdk.Tool{smallTool("small")}
		}
		return bigTools("a", 5)
	})
	urlB := listingServer(t, func() []*sdk.Tool { return bigTools("b", 2) })
	tk := toolkit.New(nil)
	servers, err := Mount(testCtx(t), tk, []ServerConfig{
		{Name: "a", Transport: TransportStreamableHTTP, URL: urlA},
		{Name: "b", Transport: TransportStreamableHTTP, URL: urlB},
	}, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Close() })
	b, _ := servers.Get("b")
	if got := b.Tools(); len(got) != 0 {
		t.Fatalf("server b: registered %v, want none (no room)", got)
	}
	shrunk.Store(true)
	a, _ := servers.Get("a")
	if err := a.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "server b to register its tools in the room freed", func() bool { return len(b.Tools()) == 2 })
}
