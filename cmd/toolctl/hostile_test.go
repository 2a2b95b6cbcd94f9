package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// hostile is text a fleet member may put in what it announces or
// answers: a terminal title, a screen clear, a C1 CSI, a bidi override
// and a carriage return.
const hostile = "owned\x1b]0;title\a\x1b[2J\u009b31m\u202eexe.txt\rfake"

// hostileFleet starts an embedded server with the fleet's group-state
// bucket and a member that answers discover requests with an
// announcement carrying hostile text in every free-form field (group
// description and instructions, tool description, a skill's description
// and directory); it returns the server's URL.
func hostileFleet(t *testing.T) string {
	t.Helper()
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewKVState(natstest.Ctx(t), js, nil); err != nil {
		t.Fatal(err)
	}
	ann := wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Groups: []wire.AnnouncedGroup{{Name: "web", Description: hostile, Instructions: "Use it well.\n" + hostile, Active: true}},
		Tools: []wire.AnnouncedTool{{Name: "search", Description: hostile, Group: "web", Idempotency: "unknown",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}},
		Meta: map[string]any{wire.MetaSkills: []any{map[string]any{"name": "pdf", "description": hostile, "group": "web", "dir": "/srv/" + hostile}}},
	}
	data, err := wire.JSON.Marshal(&ann)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.Subscribe(wire.SubjectDiscover, func(m *nats.Msg) {
		m.RespondMsg(&nats.Msg{Header: wire.JSON.Header(), Data: data})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	nc.Flush()
	return s.ClientURL()
}

// unprintable returns the first character of s that is neither printable
// nor a line break, and whether there is one.
func unprintable(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && !unicode.IsPrint(r) {
			return r, true
		}
	}
	return 0, false
}

// TestFleetCommandsPrintable: what a fleet member announces reaches the
// operator's terminal through tools, groups, skills and instructions;
// the group instructions and the <agent-skills> prompt were printed as
// they were, so a member (or the MCP server behind it) could retitle,
// clear or rewrite the terminal. Their human-readable output holds no
// unprintable character but line breaks.
func TestFleetCommandsPrintable(t *testing.T) {
	url := hostileFleet(t)
	for _, args := range [][]string{
		{"tools"}, {"groups"}, {"groups", "--session", "s1"}, {"skills"}, {"skills", "--session", "s1"},
		{"instructions"}, {"instructions", "--session", "s1"},
	} {
		code, out, errs := toolctl(t, append([]string{"--nats", url}, args...)...)
		if code != exitOK {
			t.Errorf("toolctl %s: exit %d: %s", strings.Join(args, " "), code, errs)
			continue
		}
		if !strings.Contains(out, "owned") {
			t.Errorf("toolctl %s does not show the member's text:\n%s", strings.Join(args, " "), out)
		}
		for name, s := range map[string]string{"stdout": out, "stderr": errs} {
			if r, bad := unprintable(s); bad {
				t.Errorf("toolctl %s printed %q on %s:\n%s", strings.Join(args, " "), r, name, s)
			}
		}
	}
}

// TestGroupsSetPrintable: groups set prints the instructions of the
// groups it activated, as reset_tools answers them from a worker; they
// were printed as they were.
func TestGroupsSetPrintable(t *testing.T) {
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	state, err := bus.NewKVState(natstest.Ctx(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access.", Instructions: "Use it well.\n" + hostile}); err != nil {
		t.Fatal(err)
	}
	search := toolkit.Func("search", "Search.", func(ctx context.Context, in struct{}) (string, error) { return "found", nil })
	if err := tk.Add(search, toolkit.InGroup("web")); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "groups", "set", "--session", "s1", "web")
	if code != exitOK || !strings.Contains(out, "owned") {
		t.Fatalf("groups set: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}
	if r, bad := unprintable(out); bad {
		t.Errorf("groups set printed %q:\n%s", r, out)
	}
}

// TestCallNotesPrintable: what toolctl call prints of a call besides the
// tool's output (progress, log messages, an elicitation's prompt, -v's
// metadata, its notes of data blocks) comes from the tool, so from an MCP
// server a worker mounts; it was printed as it was.
func TestCallNotesPrintable(t *testing.T) {
	tk := toolkit.New(nil)
	leak := toolkit.Stream("leak", "Leak.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := w.Progress(toolkit.Progress{Progress: 1, Total: 2, Message: hostile}); err != nil {
			return err
		}
		for _, m := range []toolkit.LogMessage{{Level: "info", Logger: hostile, Data: hostile}, {Level: "info", Data: map[string]any{"k": hostile}}} {
			if err := toolkit.Log(w, m); err != nil {
				return err
			}
		}
		if _, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": hostile, "requestedSchema": map[string]any{
			"type": "object", "properties": map[string]any{"name" + hostile: map[string]any{"type": "string" + hostile}}}}); err != nil {
			return err
		}
		return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, MediaType: "image/png" + hostile, URL: "https://x/" + hostile}},
			Metadata: map[string]any{"note": hostile}})
	})
	if err := tk.Add(leak); err != nil {
		t.Fatal(err)
	}
	s := natstest.Embedded(t, true)
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	var out, errb strings.Builder
	code := run(natstest.Ctx(t), []string{"--nats", s.ClientURL(), "call", "-v", "--answer", "leak"}, strings.NewReader("x\n"), &out, &errb)
	if code != exitOK {
		t.Fatalf("call: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "owned") || !strings.Contains(out.String(), "owned") {
		t.Errorf("the tool's notes are missing:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
		if r, bad := unprintable(s); bad {
			t.Errorf("call printed %q on %s:\n%s", r, name, s)
		}
	}
}

// TestResultStatePrintable: a kept final is what a worker stored in the
// results bucket, and its state is not checked on the way (its code
// is): toolctl result printed "ended STATE" as the worker wrote it.
func TestResultStatePrintable(t *testing.T) {
	s := natstest.Embedded(t, true)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := natstest.Ctx(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: wire.BucketResults})
	if err != nil {
		t.Fatal(err)
	}
	f := wire.Frame{Kind: wire.KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{ID: "c1", State: toolkit.State("error" + hostile),
		Code: toolkit.CodeToolError, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "failed"}}, Metadata: map[string]any{"worker": "w1"}}}
	b, err := wire.Msgpack.Marshal(&f)
	if err != nil {
		t.Fatal(err)
	}
	// As a worker keeps it: with the wire version.
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + kv.Bucket() + "." + wire.ResultKey("", "c1"), Header: nats.Header{wire.HeaderVersion: {wire.Version}}, Data: b}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "result", "c1")
	if code != exitError || !strings.Contains(errs, "owned") {
		t.Fatalf("result: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if r, bad := unprintable(errs); bad {
		t.Errorf("result printed %q on stderr:\n%s", r, errs)
	}
}

// TestHeadersReplyErrorPrintable: mcp-headers printed a worker's error
// text as it was (it may quote what the MCP server said).
func TestHeadersReplyErrorPrintable(t *testing.T) {
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	data, err := wire.Msgpack.Marshal(&wire.HeadersReply{Error: "refused: " + hostile})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.Subscribe(wire.HeadersSubject("w1"), func(m *nats.Msg) { m.Respond(data) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	nc.Flush()
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "mcp-headers", "--instance", "w1", "docs", "Authorization=Bearer x")
	if code != exitError || !strings.Contains(errs, "owned") {
		t.Fatalf("mcp-headers: exit %d\n%s%s", code, out, errs)
	}
	if r, bad := unprintable(errs); bad {
		t.Errorf("mcp-headers printed %q on stderr:\n%s", r, errs)
	}
}

// TestCallJSONPrintable: `call --json` printed each event as
// encoding/json writes it, which escapes C0 controls only: a tool's
// bidi override or C1 control reached whoever reads the lines on a
// terminal. The lines hold no unprintable character, and read back to
// the tool's text.
func TestCallJSONPrintable(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("say", "Say.", func(context.Context, struct{}) (string, error) { return hostile, nil })); err != nil {
		t.Fatal(err)
	}
	s := natstest.Embedded(t, true)
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	var out, errb strings.Builder
	if code := run(natstest.Ctx(t), []string{"--nats", s.ClientURL(), "call", "--json", "say"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("call: exit %d\n%s", code, errb.String())
	}
	if r, bad := unprintable(out.String()); bad {
		t.Errorf("call --json printed %q:\n%s", r, out.String())
	}
	var last struct {
		Final *toolkit.Response `json:"final"`
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Final == nil || last.Final.Text() != hostile {
		t.Errorf("the final read back: %+v, %v\n%s", last.Final, err, out.String())
	}
}
