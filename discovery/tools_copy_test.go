package discovery

import (
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// copyAnnouncement announces a conditional tool whose schema nests maps
// and arrays, with a key order and every flag set, so that every part of
// a Tool is filled.
func copyAnnouncement(id string) wire.Announcement {
	return wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Groups: []wire.AnnouncedGroup{{Name: "web", Description: "Web access."}},
		Tools: []wire.AnnouncedTool{{Name: "viewer", Description: "Views.", Group: "basic", Idempotency: toolkit.Idempotent.String(),
			ReadOnly: true, ConcurrencySafe: true, Kind: toolkit.KindShell,
			Parameters: map[string]any{"type": "object", "required": []any{"path"},
				"properties": map[string]any{"path": map[string]any{"type": "string", "enum": []any{"a", "b"}}, "n": map[string]any{"type": "integer"}}},
			Order:       []toolkit.KeyOrder{{Path: "/properties", Keys: []string{"path", "n"}}},
			Conditional: true, ListedWith: []string{"web"}}}}
}

// mutateTool changes every part of t a caller can reach.
func mutateTool(t Tool) {
	t.Instances[0] = "changed"
	t.Parameters["type"] = "changed"
	t.Parameters["required"].([]any)[0] = "changed"
	path := t.Parameters["properties"].(map[string]any)["path"].(map[string]any)
	path["type"] = "changed"
	path["enum"].([]any)[0] = "changed"
	t.Order[0].Path = "changed"
	t.Order[0].Keys[0] = "changed"
	t.ListedWith[0] = "changed"
}

// TestToolsCopied: what Tools and Tool return is the caller's own: a
// caller changing any part of it changes neither the fleet's view (what
// later calls and Catalog return) nor another caller's result. The key
// order and the groups a tool is listed with were the fleet's own, and a
// caller sorting them changed every later listing.
func TestToolsCopied(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	publishAnnouncement(t, natstest.Conn(t, s), copyAnnouncement("w1"))
	natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })

	tools := f.Tools()
	if len(tools) != 1 || tools[0].Order == nil || tools[0].ListedWith == nil {
		t.Fatalf("Tools() = %+v, want viewer with its order and groups", tools)
	}
	// Compared as printed (fmt sorts map keys): a snapshot nothing shares.
	print := func(v any) string { return fmt.Sprintf("%#v", v) }
	want, wantTool, wantCatalog := print(tools), print(tools[0]), print(f.Catalog())
	other := f.Tools()
	for name, got := range map[string]Tool{"Tools": f.Tools()[0], "Tool": func() Tool { t, _ := f.Tool("viewer"); return t }()} {
		mutateTool(got)
		if now := print(f.Tools()); now != want {
			t.Errorf("a caller changing what %s returned changed the fleet's tools:\n got %s\nwant %s", name, now, want)
		}
		if now, _ := f.Tool("viewer"); print(now) != wantTool {
			t.Errorf("a caller changing what %s returned changed Tool:\n got %s\nwant %s", name, print(now), wantTool)
		}
		if now := print(other); now != want {
			t.Errorf("a caller changing what %s returned changed another caller's:\n got %s\nwant %s", name, now, want)
		}
		if now := print(f.Catalog()); now != wantCatalog {
			t.Errorf("a caller changing what %s returned changed the catalog:\n got %s\nwant %s", name, now, wantCatalog)
		}
	}
}

// TestToolInfo: ToolInfo holds every part of Tool but the schema
// (Parameters, Order), equal to Tool's, and what it returns is the
// caller's own: a caller changing its lists of instances and groups
// changes neither the fleet's view nor another caller's result.
func TestToolInfo(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	publishAnnouncement(t, natstest.Conn(t, s), copyAnnouncement("w1"))
	publishAnnouncement(t, natstest.Conn(t, s), copyAnnouncement("w2"))
	natstest.WaitFor(t, "w1 and w2 listed", func() bool { return listed(f, "w1") && listed(f, "w2") })

	tool, ok := f.Tool("viewer")
	if !ok {
		t.Fatal("Tool(viewer) not found")
	}
	info, ok := f.ToolInfo("viewer")
	if !ok {
		t.Fatal("ToolInfo(viewer) not found")
	}
	// Every field of Tool but the schema, by name: one added to
	// wire.AnnouncedTool and left out of ToolInfo fails here.
	tv, iv := reflect.ValueOf(tool), reflect.ValueOf(info)
	fields := reflect.VisibleFields(tv.Type())
	matched := 0
	for _, sf := range fields {
		if sf.Anonymous || sf.Name == "Parameters" || sf.Name == "Order" {
			continue
		}
		matched++
		want := tv.FieldByIndex(sf.Index)
		got := iv.FieldByName(sf.Name)
		switch {
		case !got.IsValid():
			t.Errorf("ToolInfo has no %s", sf.Name)
		case want.IsZero():
			t.Errorf("the test's tool leaves %s zero: fill it so that the comparison means something", sf.Name)
		case !reflect.DeepEqual(got.Interface(), want.Interface()):
			t.Errorf("ToolInfo.%s = %#v, Tool's %#v", sf.Name, got.Interface(), want.Interface())
		}
	}
	if n := iv.NumField(); n != matched {
		t.Errorf("ToolInfo has %d fields, Tool %d besides its schema", n, matched)
	}
	if got, want := info.IdempotencyLevel(), tool.IdempotencyLevel(); got != want || got != toolkit.Idempotent {
		t.Errorf("IdempotencyLevel = %v, Tool's %v, want %v", got, want, toolkit.Idempotent)
	}
	if got, ok := f.ToolInfo("nothing"); ok || !reflect.DeepEqual(got, ToolInfo{}) {
		t.Errorf("ToolInfo(nothing) = %+v, %v; want none", got, ok)
	}

	print := func(v any) string { return fmt.Sprintf("%#v", v) }
	want, wantTool := print(info), print(tool)
	other, _ := f.ToolInfo("viewer")
	info.Instances[0], info.Instances[1] = "changed", "changed"
	info.ListedWith[0] = "changed"
	if now, _ := f.ToolInfo("viewer"); print(now) != want {
		t.Errorf("a caller changing what ToolInfo returned changed the fleet's:\n got %s\nwant %s", print(now), want)
	}
	if now, _ := f.Tool("viewer"); print(now) != wantTool {
		t.Errorf("a caller changing what ToolInfo returned changed Tool:\n got %s\nwant %s", print(now), wantTool)
	}
	if now := print(other); now != want {
		t.Errorf("a caller changing what ToolInfo returned changed another caller's:\n got %s\nwant %s", now, want)
	}
}

// BenchmarkTools: Tools per op, and Tool or ToolInfo per op (a listing
// looks up each of its tools), over a fleet of 10,000 tools with schemas of a few
// properties.
func BenchmarkTools(b *testing.B) {
	s := natstest.Server(b)
	f := startFleet(b, natstest.Conn(b, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	const n = 10_000
	ann := wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000}
	for i := range n {
		ann.Tools = append(ann.Tools, wire.AnnouncedTool{Name: fmt.Sprint("t", i), Description: "A tool.", Group: "basic", Idempotency: "unknown",
			Parameters: map[string]any{"type": "object", "required": []any{"path"}, "properties": map[string]any{
				"path": map[string]any{"type": "string", "description": "The path."}, "n": map[string]any{"type": "integer", "enum": []any{1, 2, 3}}}},
			Order: []toolkit.KeyOrder{{Path: "/properties", Keys: []string{"path", "n"}}}})
	}
	if f.apply(announcementMsg(b, ann), time.Now()) {
		f.remerge()
	}
	if got := len(f.Tools()); got != n {
		b.Fatalf("%d tools, want %d", got, n)
	}
	b.Run("Tools", func(b *testing.B) {
		for range b.N {
			f.Tools()
		}
	})
	b.Run("Tool", func(b *testing.B) {
		for i := range b.N {
			if _, ok := f.Tool(ann.Tools[i%n].Name); !ok {
				b.Fatal("not found")
			}
		}
	})
	b.Run("ToolInfo", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, ok := f.ToolInfo(ann.Tools[i%n].Name); !ok {
				b.Fatal("not found")
			}
		}
	})
}
