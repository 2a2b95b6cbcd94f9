package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// fleetToolkit is a worker's toolkit: echo (basic, read-only), search in
// group web, and a preset that must not be announced.
func fleetToolkit(t *testing.T) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access.", Instructions: "Cite sources."}); err != nil {
		t.Fatal(err)
	}
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	if err := tk.Add(toolkit.Func("echo", "Echo the text back.", func(_ context.Context, in echoIn) (string, error) {
		return in.Text, nil
	}), toolkit.ReadOnly()); err != nil {
		t.Fatal(err)
	}
	type searchIn struct {
		Query  string `json:"query"`
		APIKey string `json:"api_key"`
	}
	if err := tk.Add(toolkit.Func("search", "Search the web.", func(_ context.Context, in searchIn) (string, error) {
		return in.Query, nil
	}), toolkit.InGroup("web"), toolkit.WithIdempotency(toolkit.Idempotent), toolkit.ConcurrencyUnsafe(),
		toolkit.WithPresets(map[string]any{"api_key": "secret"})); err != nil {
		t.Fatal(err)
	}
	return tk
}

func startAnnouncer(t *testing.T, nc *nats.Conn, tk *toolkit.Toolkit, cfg *AnnouncerOptions) *Announcer {
	t.Helper()
	a, err := NewAnnouncer(nc, tk, cfg)
	if err != nil {
		t.Fatalf("NewAnnouncer: %v", err)
	}
	t.Cleanup(func() { a.Stop() })
	return a
}

func startFleet(t testing.TB, nc *nats.Conn, cfg *FleetOptions) *Fleet {
	t.Helper()
	f, err := NewFleet(natstest.Ctx(t), nc, cfg)
	if err != nil {
		t.Fatalf("NewFleet: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func toolNames(f *Fleet) []string {
	var names []string
	for _, t := range f.Tools() {
		names = append(names, t.Name)
	}
	return names
}

// jsonNormal round-trips v through encoding/json.
func jsonNormal(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFleetSeesNewAnnouncer(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	if n := len(f.Tools()); n != 0 {
		t.Fatalf("empty fleet lists %d tools", n)
	}
	changes := make(chan struct{}, 100)
	stop := f.OnChange(func() { changes <- struct{}{} })
	defer stop()

	tk := fleetToolkit(t)
	start := time.Now()
	a := startAnnouncer(t, natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "w1", Version: "1.2.3", Queue: "workers", Interval: time.Hour})
	natstest.WaitFor(t, "w1's tools", func() bool { return len(f.Tools()) == 2 })
	t.Logf("new instance listed %v after NewAnnouncer started", time.Since(start))
	select {
	case <-changes:
	case <-time.After(natstest.Guard):
		t.Fatalf("OnChange not called within %v of w1's tools being listed", natstest.Guard)
	}

	echo, ok := f.Tool("echo")
	if !ok {
		t.Fatal("echo missing")
	}
	want, _ := tk.Schema("echo")
	if echo.Description != "Echo the text back." || echo.Group != "basic" || !echo.ReadOnly || !echo.ConcurrencySafe ||
		echo.IdempotencyLevel() != toolkit.NoSideEffects || !slices.Equal(echo.Instances, []string{"w1"}) ||
		!reflect.DeepEqual(echo.Parameters, jsonNormal(t, want.Function.Parameters)) {
		t.Errorf("echo = %+v", echo)
	}
	search, _ := f.Tool("search")
	if search.Group != "web" || search.ReadOnly || search.ConcurrencySafe || search.IdempotencyLevel() != toolkit.Idempotent {
		t.Errorf("search = %+v", search)
	}
	if props := search.Parameters["properties"].(map[string]any); props["api_key"] != nil || props["query"] == nil {
		t.Errorf("search parameters announce the preset or miss query: %v", props)
	}
	if g := f.Groups(); len(g) != 1 || g[0] != (toolkit.Group{Name: "web", Description: "Web access.", Instructions: "Cite sources."}) {
		t.Errorf("Groups() = %+v", g)
	}
	in := f.Instances()
	if len(in) != 1 || in[0].ID != "w1" || in[0].Version != "1.2.3" || in[0].Queue != "workers" ||
		!slices.Equal(in[0].Tools, []string{"echo", "search"}) || !slices.Equal(in[0].Groups, []string{"web"}) ||
		in[0].Interval != time.Hour || in[0].Expires.Sub(in[0].LastSeen) != 3*time.Hour {
		t.Errorf("Instances() = %+v", in)
	}
	if got := a.Announcement(); got.Instance != "w1" || got.Seq == 0 || len(got.Tools) != 2 {
		t.Errorf("wire.Announcement() = %+v", got)
	}
}

// A fleet started after the announcer learns it from the discover
// request, not from the (hour-long) interval.
func TestFleetDiscoversRunningInstances(t *testing.T) {
	s := natstest.Server(t)
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w2", Interval: time.Hour})
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{DiscoverWindow: 3 * time.Second})
	in := f.Instances()
	if len(in) != 2 || in[0].ID != "w1" || in[1].ID != "w2" {
		t.Fatalf("after NewFleet, Instances() = %+v; want w1 and w2", in)
	}
	if got := toolNames(f); !slices.Equal(got, []string{"echo", "search"}) {
		t.Errorf("Tools() = %v", got)
	}
}

func TestFleetFollowsToolkitChanges(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	tk := fleetToolkit(t)
	startAnnouncer(t, natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	natstest.WaitFor(t, "w1's tools", func() bool { return len(f.Tools()) == 2 })

	if err := tk.AddGroup(toolkit.Group{Name: "files", Description: "File access.", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Raw("ls", "List files.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }), toolkit.InGroup("files")); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "ls", func() bool { _, ok := f.Tool("ls"); return ok })
	if g := f.Groups(); len(g) != 2 || g[1].Name != "files" || !g[1].Active {
		t.Errorf("Groups() = %+v", g)
	}
	tk.Remove("echo")
	natstest.WaitFor(t, "echo removed", func() bool { _, ok := f.Tool("echo"); return !ok })
	if got := toolNames(f); !slices.Equal(got, []string{"search", "ls"}) {
		t.Errorf("Tools() = %v", got)
	}
}

func TestFleetGoodbyeRemovesAtOnce(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	a := startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	natstest.WaitFor(t, "w1", func() bool { return len(f.Instances()) == 1 })
	start := time.Now()
	if err := a.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// The TTL is three hours: only the goodbye can remove it.
	natstest.WaitFor(t, "w1 gone", func() bool { return len(f.Instances()) == 0 && len(f.Tools()) == 0 })
	t.Logf("stopped instance removed %v after Stop was called", time.Since(start))
	if err := a.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// A stopped announcer no longer answers discover requests.
	if err := f.Discover(natstest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Instances()); n != 0 {
		t.Errorf("after Discover, %d instances", n)
	}
}

// An announcer that dies without a goodbye (its connection closes) is
// dropped after the TTL.
func TestFleetExpiresSilentInstance(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	wc := natstest.Conn(t, s)
	var logs natstest.Buffer
	startAnnouncer(t, wc, fleetToolkit(t), &AnnouncerOptions{Instance: "dies", Interval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	// The living one's TTL (3 s) outlasts a busy machine's stall.
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "lives", Interval: time.Second})
	natstest.WaitFor(t, "both instances", func() bool { return len(f.Instances()) == 2 })
	for _, in := range f.Instances() {
		if want := map[string]time.Duration{"dies": 300 * time.Millisecond, "lives": 3 * time.Second}[in.ID]; in.Expires.Sub(in.LastSeen) != want {
			t.Errorf("%s: TTL = %v, want 3 intervals (%v)", in.ID, in.Expires.Sub(in.LastSeen), want)
		}
	}
	wc.Close()
	start := time.Now()
	natstest.WaitFor(t, "the silent instance to expire", func() bool {
		in := f.Instances()
		return len(in) == 1 && in[0].ID == "lives"
	})
	t.Logf("silent instance removed %v after its connection closed (TTL 300ms)", time.Since(start))
	if tl, _ := f.Tool("echo"); !slices.Equal(tl.Instances, []string{"lives"}) {
		t.Errorf("echo served by %v", tl.Instances)
	}
	// The dead announcer stops instead of failing every interval.
	natstest.WaitFor(t, "the announcer to stop", func() bool { return strings.Contains(logs.String(), "connection is closed") })
}

// Readers, writers and watchers at once (run with -race).
func TestFleetConcurrentUse(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	tk := fleetToolkit(t)
	startAnnouncer(t, natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "w1", Interval: 5 * time.Millisecond})
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				_ = f.Tools()
				c := f.Catalog()
				_ = c.Schemas([]string{"web"})
				_ = f.Instances()
				_ = f.Groups()
				stop := f.OnChange(func() {})
				stop()
			}
		})
	}
	for i := range 50 {
		name := fmt.Sprint("t", i)
		if err := tk.Add(toolkit.Raw(name, "x", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil })); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			tk.Remove(name)
		}
	}
	close(done)
	wg.Wait()
	natstest.WaitFor(t, "the last tool", func() bool { _, ok := f.Tool("t49"); return ok })
	if _, ok := f.Tool("t48"); ok {
		t.Error("removed tool t48 is listed")
	}
}

func TestFleetMergesInstances(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	tkB := fleetToolkit(t)
	if err := tkB.Add(toolkit.Raw("extra", "Only on b.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil })); err != nil {
		t.Fatal(err)
	}
	a := startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "a", Interval: time.Hour})
	startAnnouncer(t, natstest.Conn(t, s), tkB, &AnnouncerOptions{Instance: "b", Interval: time.Hour})
	natstest.WaitFor(t, "both instances", func() bool { return len(f.Instances()) == 2 })
	want := map[string][]string{"echo": {"a", "b"}, "search": {"a", "b"}, "extra": {"b"}}
	if got := toolNames(f); !slices.Equal(got, []string{"echo", "search", "extra"}) {
		t.Errorf("Tools() = %v", got)
	}
	for name, inst := range want {
		if tl, _ := f.Tool(name); !slices.Equal(tl.Instances, inst) {
			t.Errorf("%s served by %v, want %v", name, tl.Instances, inst)
		}
	}
	if n := len(f.Groups()); n != 1 {
		t.Errorf("%d groups, want web once", n)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "a gone", func() bool { return len(f.Instances()) == 1 })
	if tl, _ := f.Tool("echo"); !slices.Equal(tl.Instances, []string{"b"}) {
		t.Errorf("after a stopped, echo served by %v", tl.Instances)
	}
}

// A fleet's catalog lists schemas in the shape and order of Toolkit.Schemas.
func TestFleetSchemasMatchToolkit(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	tk := fleetToolkit(t)
	startAnnouncer(t, natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	natstest.WaitFor(t, "w1", func() bool { return len(f.Tools()) == 2 })
	for _, active := range [][]string{nil, {"web"}, {"nope"}} {
		c := f.Catalog()
		got := jsonNormal(t, c.Schemas(active))
		want := jsonNormal(t, tk.Schemas(active))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Schemas(%v):\n got %v\nwant %v", active, got, want)
		}
	}
	// No groups at all: no meta tool.
	plain := toolkit.New(nil)
	if err := plain.Add(toolkit.Raw("only", "Only tool.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil })); err != nil {
		t.Fatal(err)
	}
	s2 := natstest.Server(t)
	f2 := startFleet(t, natstest.Conn(t, s2), &FleetOptions{})
	startAnnouncer(t, natstest.Conn(t, s2), plain, &AnnouncerOptions{Instance: "p", Interval: time.Hour})
	natstest.WaitFor(t, "p", func() bool { return len(f2.Tools()) == 1 })
	c2 := f2.Catalog()
	if got := c2.Schemas(nil); len(got) != 1 || got[0].Function.Name != "only" {
		t.Errorf("Schemas without groups = %+v", got)
	}
}

func TestFleetSessionSchemas(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	tk := fleetToolkit(t)
	if err := tk.AddGroup(toolkit.Group{Name: "files", Description: "File access.", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Raw("ls", "List files.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }), toolkit.InGroup("files")); err != nil {
		t.Fatal(err)
	}
	startAnnouncer(t, natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	natstest.WaitFor(t, "w1", func() bool { return len(f.Tools()) == 3 })
	state := toolkit.NewMemoryState()
	ctx := natstest.Ctx(t)
	names := func(ss []toolkit.FunctionSchema) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Function.Name)
		}
		return out
	}
	got, err := f.SessionSchemas(ctx, state, "new-session", 0)
	if err != nil || !slices.Equal(names(got), []string{"reset_tools", "echo", "ls"}) {
		t.Errorf("default session: %v, %v; want the default-active files group", names(got), err)
	}
	rev, err := state.Store(ctx, "agent", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = f.SessionSchemas(ctx, state, "agent", rev)
	if err != nil || !slices.Equal(names(got), []string{"reset_tools", "echo", "search"}) {
		t.Errorf("web session: %v, %v", names(got), err)
	}
}

// tools.discover answers msgpack by default and JSON on a JSON request, so
// `nats req tools.discover "" -H Content-Type:application/json` works.
func TestDiscoverEncodings(t *testing.T) {
	s := natstest.Server(t)
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Version: "v9", Interval: time.Hour})
	nc := natstest.Conn(t, s)

	m, err := nc.Request(wire.SubjectDiscover, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ann wire.Announcement
	if err := wire.Msgpack.Unmarshal(m.Data, &ann); err != nil || ann.Instance != "w1" || ann.Format != wire.AnnounceFormat || len(ann.Tools) != 2 {
		t.Errorf("msgpack answer: %+v, %v", ann, err)
	}

	req := &nats.Msg{Subject: wire.SubjectDiscover, Header: nats.Header{"Content-Type": []string{"application/json"}}}
	m, err = nc.RequestMsg(req, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ct := m.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("JSON answer Content-Type = %q", ct)
	}
	var doc map[string]any
	if err := json.Unmarshal(m.Data, &doc); err != nil {
		t.Fatalf("JSON answer %q: %v", m.Data, err)
	}
	tools, _ := doc["tools"].([]any)
	if doc["v"] != float64(1) || doc["instance"] != "w1" || doc["version"] != "v9" || len(tools) != 2 {
		t.Fatalf("JSON answer = %s", m.Data)
	}
	echo := tools[0].(map[string]any)
	for _, k := range []string{"name", "description", "group", "read_only", "concurrency_safe", "idempotency", "parameters"} {
		if _, ok := echo[k]; !ok {
			t.Errorf("JSON tool has no %q: %v", k, echo)
		}
	}
	for _, k := range []string{"incarnation", "epoch_ms", "seq", "interval_ms", "groups", "queue"} {
		if _, ok := doc[k]; !ok && k != "queue" {
			t.Errorf("JSON announcement has no %q", k)
		}
	}
}

// TestAnnouncementsReadable: periodic announcements are JSON (with the
// Content-Type header) so `nats sub 'tools.>'` shows what a person reads;
// one too big for that goes out in msgpack, and fleets read both.
func TestAnnouncementsReadable(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	sub, err := nc.SubscribeSync(wire.SubjectAnnouncePrefix + "*")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	big := toolkit.New(nil)
	long := strings.Repeat("a long description ", 100)
	for i := range 20 {
		if err := big.Add(toolkit.Func(fmt.Sprintf("tool%d", i), long, func(ctx context.Context, in struct{}) (string, error) { return "", nil })); err != nil {
			t.Fatal(err)
		}
	}
	// The fleet hears the announcements the announcers make at their
	// start, the ones checked below, not answers to its discover request
	// (those come in the codec the request asks for, and only within its
	// discover window).
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "small", Interval: time.Hour})
	startAnnouncer(t, natstest.Conn(t, s), big, &AnnouncerOptions{Instance: "big", Interval: time.Hour})
	seen := map[string]string{}
	for len(seen) < 2 {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("announcements seen: %v: %v", seen, err)
		}
		var ann wire.Announcement
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &ann); err != nil {
			t.Fatalf("%s: %v", m.Subject, err)
		}
		seen[ann.Instance] = m.Header.Get(wire.HeaderContentType)
		if ann.Instance == "small" && !json.Valid(m.Data) {
			t.Fatalf("small announcement is not JSON: %q", m.Data)
		}
	}
	if seen["small"] != wire.ContentTypeJSON || seen["big"] != "" {
		t.Fatalf("content types: %v", seen)
	}
	natstest.WaitFor(t, "both instances in the fleet", func() bool { return len(f.Instances()) == 2 })
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func objSchema(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

// Malformed announcements are logged and ignored; good ones still count.
func TestFleetBadAnnouncements(t *testing.T) {
	s := natstest.Server(t)
	var logs natstest.Buffer
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	nc := natstest.Conn(t, s)
	good := func(instance string, seq uint64, tools ...wire.AnnouncedTool) wire.Announcement {
		return wire.Announcement{Format: 1, Instance: instance, EpochMS: 1, Seq: seq, IntervalMS: 3_600_000,
			Groups: []wire.AnnouncedGroup{{Name: "web", Description: "Web."}}, Tools: tools}
	}
	ok := wire.AnnouncedTool{Name: "ok", Description: "Fine.", Group: "basic", Parameters: objSchema(map[string]any{})}
	tests := []struct {
		name    string
		subject string
		hdr     nats.Header
		data    []byte
		log     string
	}{
		{"not msgpack", "tools.announce.x", nil, []byte("\xc1garbage"), "not announcements"},
		{"bad msgpack", "tools.announce.x", nil, []byte("\x81\xa1v\xc1"), "undecodable body"},
		{"bad JSON", "tools.announce.x", nats.Header{"Content-Type": {"application/json"}}, []byte("{"), "undecodable body"},
		{"no format", "tools.announce.x", nil, mustMsgpack(t, wire.Announcement{Instance: "x", EpochMS: 1, Seq: 1}), "format version"},
		{"bad instance", "tools.announce.x", nil, mustMsgpack(t, wire.Announcement{Format: 1, Instance: "x.y", EpochMS: 1, Seq: 1}), "invalid instance id"},
		{"negative interval", "tools.announce.x", nil, mustMsgpack(t, wire.Announcement{Format: 1, Instance: "x", IntervalMS: -1}), "negative interval"},
		{"long incarnation", "tools.announce.x", nil, mustMsgpack(t, wire.Announcement{Format: 1, Instance: "x", Incarnation: strings.Repeat("i", 65), EpochMS: 1, Seq: 1}), "incarnation of 65 bytes, over 64"},
		{"subject mismatch", "tools.announce.y", nil, mustMsgpack(t, good("x", 1, ok)), "another instance's subject"},
		{"non-object schema", "tools.announce.z", nil, mustMsgpack(t, good("z", 1,
			wire.AnnouncedTool{Name: "bad_schema", Description: "x", Group: "basic", Parameters: map[string]any{"type": "string"}})), `tool \"bad_schema\"`},
		{"unknown group", "tools.announce.u", nil, mustMsgpack(t, good("u", 1,
			wire.AnnouncedTool{Name: "lost", Description: "x", Group: "nowhere", Parameters: objSchema(nil)})), `group \"nowhere\" not announced`},
		{"bad tool name", "tools.announce.n", nil, mustMsgpack(t, good("n", 1,
			wire.AnnouncedTool{Name: "a.b", Description: "x", Group: "basic", Parameters: objSchema(nil)})), `tool \"a.b\": invalid name`},
		{"tool name too long", "tools.announce.l", nil, mustMsgpack(t, good("l", 1,
			wire.AnnouncedTool{Name: strings.Repeat("l", toolkit.MaxNameLen+1), Description: "x", Group: "basic", Parameters: objSchema(nil)})), `invalid name (a token of [A-Za-z0-9_-] of at most 255 bytes)`},
		{"group name too long", "tools.announce.lg", nil, mustMsgpack(t, wire.Announcement{Format: 1, Instance: "lg", EpochMS: 1, Seq: 1,
			Groups: []wire.AnnouncedGroup{{Name: strings.Repeat("g", toolkit.MaxNameLen+1), Description: "Long."}}}),
			`group \"` + strings.Repeat("g", 128) + `\": invalid name (a token of [A-Za-z0-9_-] of at most 255 bytes, not basic)`},
		{"group without description", "tools.announce.g", nil, mustMsgpack(t, wire.Announcement{Format: 1, Instance: "g", EpochMS: 1, Seq: 1,
			Groups: []wire.AnnouncedGroup{{Name: "nodesc"}}}), `group \"nodesc\": no description`},
		{"JSON with a bad tool", "tools.announce.j", nats.Header{"Content-Type": {"application/json"}},
			[]byte(`{"v":1,"instance":"j","epoch":1,"seq":1,"tools":[{"name":"jt","description":"d","parameters":{"type":"array"}}]}`), `tool \"jt\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := nc.PublishMsg(&nats.Msg{Subject: tt.subject, Header: tt.hdr, Data: tt.data}); err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, "log "+tt.log, func() bool { return strings.Contains(logs.String(), tt.log) })
		})
	}
	// The fleet still works: a good announcement on the same subscription.
	if err := nc.Publish("tools.announce.x", mustMsgpack(t, good("x", 1, ok))); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the good tool", func() bool { _, found := f.Tool("ok"); return found })
	for _, bad := range []string{"bad_schema", "lost", "a.b", "jt"} {
		if _, found := f.Tool(bad); found {
			t.Errorf("malformed tool %q is listed", bad)
		}
	}
}

// Messages of one run of an instance (here of announcers that send no
// incarnation: their epoch names the run) are ordered by seq: older ones
// are ignored, and a goodbye is final for its run. A restart (another
// run) wins when its message arrives, whatever its epoch, and the
// replaced run's late messages are ignored.
func TestFleetOrdersAnnouncements(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	nc := natstest.Conn(t, s)
	tool := func(name string) wire.AnnouncedTool {
		return wire.AnnouncedTool{Name: name, Description: name, Group: "basic", Parameters: objSchema(map[string]any{})}
	}
	ann := func(epoch int64, seq uint64, bye bool, tools ...wire.AnnouncedTool) []byte {
		return mustMsgpack(t, wire.Announcement{Format: 1, Instance: "x", EpochMS: epoch, Seq: seq, IntervalMS: 3_600_000, Goodbye: bye, Tools: tools})
	}
	barrier := 0
	// sync publishes a marker instance on the same subscription and waits
	// for it, so everything published before has been processed.
	sync := func() {
		barrier++
		id := fmt.Sprint("barrier", barrier)
		if err := nc.Publish("tools.announce."+id, mustMsgpack(t, wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 1})); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, id, func() bool {
			return slices.ContainsFunc(f.Instances(), func(in Instance) bool { return in.ID == id })
		})
	}
	pub := func(b []byte) {
		if err := nc.Publish("tools.announce.x", b); err != nil {
			t.Fatal(err)
		}
	}
	has := func(name string) bool { _, ok := f.Tool(name); return ok }

	pub(ann(10, 5, false, tool("new")))
	pub(ann(10, 3, false, tool("old")))
	sync()
	if !has("new") || has("old") {
		t.Fatalf("older seq applied: %v", toolNames(f))
	}
	pub(ann(10, 6, true))
	pub(ann(10, 4, false, tool("late")))
	sync()
	if has("new") || has("late") {
		t.Fatalf("after goodbye: %v", toolNames(f))
	}
	pub(ann(11, 1, false, tool("restarted")))
	sync()
	if !has("restarted") {
		t.Fatalf("restart with a newer epoch not applied: %v", toolNames(f))
	}
	pub(ann(7, 1, false, tool("behind")))
	sync()
	if !has("behind") || has("restarted") {
		t.Fatalf("restart with an older epoch (a clock behind) not applied: %v", toolNames(f))
	}
	pub(ann(11, 2, false, tool("restarted")))
	sync()
	if !has("behind") || has("restarted") {
		t.Fatalf("a late message of the replaced run applied: %v", toolNames(f))
	}
	pub(ann(7, 2, false, tool("behind"), tool("grown")))
	sync()
	if !has("grown") {
		t.Fatalf("the next message of the current run not applied: %v", toolNames(f))
	}
}

func TestAnnouncerBadConfig(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	tk := fleetToolkit(t)
	tests := []struct {
		name string
		nc   *nats.Conn
		tk   *toolkit.Toolkit
		cfg  *AnnouncerOptions
		want string
	}{
		{"nil conn", nil, tk, &AnnouncerOptions{}, "nil connection"},
		{"nil toolkit", nc, nil, &AnnouncerOptions{}, "nil toolkit"},
		{"dotted instance", nc, tk, &AnnouncerOptions{Instance: "a.b"}, "invalid instance id"},
		{"wildcard instance", nc, tk, &AnnouncerOptions{Instance: "*"}, "invalid instance id"},
		{"negative interval", nc, tk, &AnnouncerOptions{Interval: -time.Second}, "negative interval"},
		{"sub-millisecond interval", nc, tk, &AnnouncerOptions{Interval: time.Microsecond}, "1 ms resolution"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewAnnouncer(tt.nc, tt.tk, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewAnnouncer = %v, %v; want an error containing %q", a, err, tt.want)
			}
		})
	}
	closed := natstest.Conn(t, s)
	closed.Close()
	if _, err := NewAnnouncer(closed, tk, &AnnouncerOptions{}); err == nil {
		t.Error("NewAnnouncer on a closed connection: no error")
	}
	// A random instance id is a valid token.
	a := startAnnouncer(t, nc, tk, &AnnouncerOptions{})
	if !toolkit.ValidName(a.Instance()) {
		t.Errorf("random instance id %q is not a subject token", a.Instance())
	}
}

func TestNewFleetBadConfig(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	tests := []struct {
		name string
		nc   *nats.Conn
		cfg  *FleetOptions
		want string
	}{
		{"nil conn", nil, &FleetOptions{}, "nil connection"},
		{"negative TTL", nc, &FleetOptions{TTL: -1}, "negative TTL"},
		{"negative window", nc, &FleetOptions{DiscoverWindow: -1}, "negative discover window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFleet(natstest.Ctx(t), tt.nc, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewFleet = %v, %v; want an error containing %q", f, err, tt.want)
			}
		})
	}
	// A cancelled context fails the initial discover while an instance
	// keeps the window open.
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w", Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewFleet(ctx, nc, &FleetOptions{DiscoverWindow: time.Hour}); err == nil {
		t.Error("NewFleet with a cancelled context: no error")
	}
}

// An announcement over max_payload fails loudly at start, never truncated.
func TestAnnouncerOverMaxPayload(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 2048 })
	tk := toolkit.New(nil)
	for i := range 50 {
		err := tk.Add(toolkit.Raw(fmt.Sprint("tool", i), strings.Repeat("A long description. ", 5), nil,
			func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := NewAnnouncer(natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "big"})
	if err == nil || !strings.Contains(err.Error(), "max_payload") || !strings.Contains(err.Error(), "50 tools") {
		t.Fatalf("NewAnnouncer = %v; want a max_payload error", err)
	}
}

// A worker announces its toolkit; a client lists the fleet's tools for a
// session (its groups here in memory; bus.KVState keeps them in JetStream
// KV for a real fleet).
func ExampleNewFleet() {
	dir, err := os.MkdirTemp("", "toolbus-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{DontListen: true, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		log.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		log.Fatal("nats-server not ready")
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	ctx := context.Background()

	// The client side: a live view of the fleet.
	cc, _ := nats.Connect("", nats.InProcessServer(ns))
	defer cc.Close()
	fleet, err := NewFleet(ctx, cc, &FleetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer fleet.Close()
	changed := make(chan struct{}, 1)
	fleet.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})

	// A worker: its toolkit is announced.
	wc, _ := nats.Connect("", nats.InProcessServer(ns))
	defer wc.Close()
	state := toolkit.NewMemoryState()
	tk := toolkit.New(&toolkit.Options{State: state})
	_ = tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access."})
	type q struct {
		Query string `json:"query"`
	}
	_ = tk.Add(toolkit.Func("search", "Search the web.", func(_ context.Context, in q) (string, error) { return in.Query, nil }), toolkit.InGroup("web"))
	_ = tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in q) (string, error) { return in.Query, nil }))
	ann, err := NewAnnouncer(wc, tk, &AnnouncerOptions{Instance: "worker-1", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	defer ann.Stop()
	for len(fleet.Tools()) < 2 {
		<-changed
	}

	for _, t := range fleet.Tools() {
		fmt.Println(t.Name, t.Group, t.Instances)
	}
	// reset_tools ran somewhere in the fleet and returned a revision.
	resp := tk.Invoke(ctx, toolkit.ToolCall{ID: "r1", Name: "reset_tools", Session: "agent-1", Input: map[string]any{"web": true}})
	rev := resp.Metadata[toolkit.MetaGroupsRevision].(uint64)
	schemas, err := fleet.SessionSchemas(ctx, state, "agent-1", rev)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range schemas {
		fmt.Print(s.Function.Name, " ")
	}
	fmt.Println()
	// Output:
	// search web [worker-1]
	// echo basic [worker-1]
	// reset_tools echo search
}

// A tool listed only with some groups (toolkit.ListedWith, the skill
// viewer) is announced so and listed by the fleet as by its toolkit; a
// fleet lists it while one of any instance's groups is basic or active,
// and always once an instance announces it unconditionally.
func TestFleetListedWith(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{})
	kit := func(groups []string, conditional bool) *toolkit.Toolkit {
		tk := fleetToolkit(t)
		var opts []toolkit.Option
		if conditional {
			opts = append(opts, toolkit.ListedWith(func() []string { return groups }))
		}
		if err := tk.Add(toolkit.Raw("viewer", "Views.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }), opts...); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	listed := func(active []string) bool {
		c := f.Catalog()
		return slices.ContainsFunc(c.Schemas(active), func(fs toolkit.FunctionSchema) bool { return fs.Function.Name == "viewer" })
	}
	a := kit([]string{"web"}, true)
	startAnnouncer(t, natstest.Conn(t, s), a, &AnnouncerOptions{Instance: "a", Interval: time.Hour})
	natstest.WaitFor(t, "a", func() bool { return len(f.Tools()) == 3 })
	for _, active := range [][]string{nil, {"web"}} {
		c := f.Catalog()
		if got, want := jsonNormal(t, c.Schemas(active)), jsonNormal(t, a.Schemas(active)); !reflect.DeepEqual(got, want) {
			t.Errorf("Schemas(%v):\n got %v\nwant %v", active, got, want)
		}
	}
	startAnnouncer(t, natstest.Conn(t, s), kit(nil, true), &AnnouncerOptions{Instance: "b", Interval: time.Hour})
	natstest.WaitFor(t, "b", func() bool { return len(f.Instances()) == 2 })
	if listed(nil) || !listed([]string{"web"}) {
		t.Errorf("a's web and b's none: listed without groups %v, with web %v; want false, true", listed(nil), listed([]string{"web"}))
	}
	c := startAnnouncer(t, natstest.Conn(t, s), kit(nil, false), &AnnouncerOptions{Instance: "c", Interval: time.Hour})
	natstest.WaitFor(t, "c", func() bool { return len(f.Instances()) == 3 })
	if !listed(nil) {
		t.Error("c lists it always, the fleet does not")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "c gone", func() bool { return len(f.Instances()) == 2 })
	if listed(nil) {
		t.Error("c is gone, the fleet still lists it always")
	}
}
