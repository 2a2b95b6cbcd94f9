package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// TestJSONRequest is the worked example of subjects.md: JSON requests as
// `nats req` sends them get JSON finals back, byte for byte.
func TestJSONRequest(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	nc := natstest.Connect(t, s)
	for _, tc := range []struct{ body, golden string }{
		{`{"id":"c1","input":{"text":"hi"}}`, "testdata/echo_reply.json"},
		{`{"input":{"text":"hi"}}`, "testdata/noid_reply.json"},
	} {
		m, err := nc.RequestMsg(&nats.Msg{
			Subject: "tools.call.echo",
			Header:  nats.Header{"Content-Type": {"application/json"}},
			Data:    []byte(tc.body),
		}, guard)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(tc.golden)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(m.Data); got != strings.TrimSpace(string(want)) {
			t.Fatalf("reply\n%s\nwant (%s)\n%s", got, tc.golden, want)
		}
		if ct := m.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("reply Content-Type %q", ct)
		}
	}
}

// number reads a metadata number, whatever width msgpack or JSON gave it.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// TestJSONStreaming follows a streaming call in JSON frame by frame, as a
// client in another language would: its own inbox, seq order, the final
// counting the chunks and carrying no content.
func TestJSONStreaming(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	next := make(chan struct{}, 3)
	mustAdd(t, tk, toolkit.Stream("count", "Counts to three, one step per chunk the caller saw.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for i := range 3 {
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				return err
			}
			<-next // the caller has this chunk: the call is streaming
		}
		return nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	sub, err := nc.SubscribeSync("_INBOX.json-test.*")
	if err != nil {
		t.Fatal(err)
	}
	err = nc.PublishMsg(&nats.Msg{Subject: "tools.call.count", Reply: "_INBOX.json-test.c1",
		Header: nats.Header{"Content-Type": {"application/json"}}, Data: []byte(`{"id":"c1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for seq := uint64(1); ; seq++ {
		m, err := sub.NextMsg(guard)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get("Content-Type") != "application/json" || m.Data[0] != '{' {
			t.Fatalf("frame %q is not JSON", m.Data)
		}
		f, err := decodeFrame(m)
		if err != nil {
			t.Fatal(err)
		}
		if f.Seq != seq || f.ID != "c1" {
			t.Fatalf("frame %+v, want seq %d of c1", f, seq)
		}
		switch f.Kind {
		case wire.KindChunk:
			text.WriteString(f.Chunk.Content[0].Text)
			next <- struct{}{}
		case wire.KindFinal:
			if f.Chunks != 3 || len(f.Final.Content) != 0 || f.Final.State != toolkit.StateSuccess || text.String() != "012" {
				t.Fatalf("final %+v after chunks %q", f, text.String())
			}
			return
		}
	}
}

func TestList(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, nil)
	if _, err := c.List(ctxT(t), "s"); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("List with no worker: %v, want no responders", err)
	}
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	reply, err := c.List(ctxT(t), "s")
	if err != nil {
		t.Fatal(err)
	}
	if reply.Worker != "w1" || !slices.Equal(reply.Tools, []string{"echo"}) || len(reply.Schemas) != 1 || reply.Schemas[0].Function.Name != "echo" {
		t.Fatalf("%+v", reply)
	}
	for _, tc := range []struct {
		name string
		hdr  nats.Header
		body string
		want string
	}{
		{"bad JSON", nats.Header{"Content-Type": {"application/json"}}, `{"session":`, "not a valid json object"},
		{"bad revision", nats.Header{wire.HeaderGroupsRevision: {"-1"}}, "", "Toolbus-Groups-Revision"},
	} {
		m, err := nc.RequestMsg(&nats.Msg{Subject: wire.SubjectList, Header: tc.hdr, Data: []byte(tc.body)}, guard)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(m.Data), tc.want) {
			t.Fatalf("%s: reply %q, want an error containing %q", tc.name, m.Data, tc.want)
		}
	}
}

// TestListVersion: tools.list refuses a wire version it does not speak,
// naming the header, as calls do.
func TestListVersion(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	for _, tc := range []struct {
		version, wantErr string
	}{
		{"", ""},
		{wire.Version, ""},
		{"2", `header Toolbus-Version: wire version "2" is not supported`},
	} {
		t.Run("version "+tc.version, func(t *testing.T) {
			msg := &nats.Msg{Subject: wire.SubjectList, Header: nats.Header{}}
			if tc.version != "" {
				msg.Header.Set(wire.HeaderVersion, tc.version)
			}
			m, err := nc.RequestMsg(msg, guard)
			if err != nil {
				t.Fatal(err)
			}
			var reply wire.ListReply
			if err := msgpack.Unmarshal(m.Data, &reply); err != nil {
				t.Fatal(err)
			}
			if tc.wantErr == "" && (reply.Error != "" || len(reply.Tools) != 1) || tc.wantErr != "" && !strings.Contains(reply.Error, tc.wantErr) {
				t.Fatalf("reply %+v, want error %q", reply, tc.wantErr)
			}
		})
	}
}

// TestChunksTravelTogether: chunks a tool writes back to back leave in a
// few messages (a chunk frame with more chunks) to a caller that reads
// them, each chunk keeps its own sequence number, and the Go client hands
// every chunk to the caller in order, as it would have one chunk per
// message; a caller that does not say it reads them gets one per message.
func TestChunksTravelTogether(t *testing.T) {
	const n, size = 100, 1024 // 100 KiB: several bursts of about 32 KiB
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("burst", "Writes 100 numbered chunks at once.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for i := range n {
			if err := w.Write(toolkit.Text(fmt.Sprintf("%-*d", size, i))); err != nil {
				return err
			}
		}
		return nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	want := ""
	for i := range n {
		want += fmt.Sprintf("%-*d", size, i)
	}

	// On the wire, as a JSON client sees it: bursts in few messages when
	// the request says it reads them ("more": true), one chunk per
	// message otherwise (a client written before chunk frames had more).
	nc := natstest.Connect(t, s)
	for _, tc := range []struct {
		id, body string
		more     bool
	}{{"c1", `{"id":"c1","more":true}`, true}, {"c2", `{"id":"c2"}`, false}} {
		sub, err := nc.SubscribeSync("_INBOX.burst-test." + tc.id)
		if err != nil {
			t.Fatal(err)
		}
		err = nc.PublishMsg(&nats.Msg{Subject: "tools.call.burst", Reply: "_INBOX.burst-test." + tc.id,
			Header: nats.Header{"Content-Type": {"application/json"}}, Data: []byte(tc.body)})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		msgs, chunks := 0, 0
		for last := uint64(0); ; {
			m, err := sub.NextMsg(guard)
			if err != nil {
				t.Fatal(err)
			}
			msgs++
			f, err := decodeFrame(m)
			if err != nil {
				t.Fatal(err)
			}
			if f.Seq != last+1 {
				t.Fatalf("frame seq %d after %d", f.Seq, last)
			}
			last = f.Last()
			if f.Kind == wire.KindFinal {
				if f.Chunks != n || chunks != n || text.String() != want {
					t.Fatalf("final counts %d chunks; got %d chunks, %d bytes of text", f.Chunks, chunks, text.Len())
				}
				break
			}
			if f.Kind != wire.KindChunk || (!tc.more && len(f.More) > 0) {
				t.Fatalf("frame %s seq %d with %d more chunks", f.Kind, f.Seq, len(f.More))
			}
			for _, c := range append([]toolkit.Chunk{*f.Chunk}, f.More...) {
				text.WriteString(c.Content[0].Text)
				chunks++
			}
		}
		if tc.more && msgs > 8 || !tc.more && msgs != n+1 {
			t.Fatalf("%s: %d chunks took %d messages", tc.body, n, msgs)
		}
		sub.Unsubscribe()
	}

	// Through the Go client: one event per chunk, in order.
	c := newClient(t, natstest.Connect(t, s), nil)
	events := 0
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "burst"}) {
		if ev.Chunk != nil {
			if got := ev.Chunk.Content[0].Text; got != fmt.Sprintf("%-*d", size, events) {
				t.Fatalf("chunk %d is %.8q", events, got)
			}
			events++
		}
		if ev.Final != nil {
			if ev.Final.Text() != want || ev.Final.State != toolkit.StateSuccess {
				t.Fatalf("final %s with %d bytes", ev.Final.State, len(ev.Final.Text()))
			}
		}
	}
	if events != n {
		t.Fatalf("%d chunk events, want %d", events, n)
	}
}
