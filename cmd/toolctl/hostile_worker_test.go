package main

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// hostileWorker starts an embedded server with a member that serves the
// tool name by answering each call with the frames frames gives for its
// id, published as they are to the call's reply subject; it returns the
// server's URL.
func hostileWorker(t *testing.T, name string, frames func(id string) []*wire.Frame) string {
	t.Helper()
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	sub, err := nc.Subscribe(wire.CallSubject(name, ""), func(m *nats.Msg) {
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		for _, f := range frames(req.ID) {
			data, err := wire.Msgpack.Marshal(f)
			if err != nil {
				t.Error(err)
				return
			}
			if nc.Publish(m.Reply, data) != nil {
				return // the test is over
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	nc.Flush()
	return s.ClientURL()
}

// textChunks are chunk frames of the texts, numbered from 1, and the
// content-less final that follows them.
func textChunks(id string, texts ...string) []*wire.Frame {
	var fs []*wire.Frame
	for i, s := range texts {
		fs = append(fs, &wire.Frame{Kind: wire.KindChunk, ID: id, Seq: uint64(i + 1),
			Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: s}}}})
	}
	return append(fs, &wire.Frame{Kind: wire.KindFinal, ID: id, Seq: uint64(len(texts) + 1), Chunks: uint64(len(texts)),
		Final: &toolkit.Response{ID: id, State: toolkit.StateSuccess, Metadata: map[string]any{"worker": "w1"}}})
}

// TestCallFramesOfAnotherCall: frames on a call's reply subject that
// carry another call's id (a worker that mixed its calls up) were taken
// as the call's own: toolctl printed the other call's output and ended
// with its final, exit 0, and the call's own frames, numbered as those
// were, were dropped as old. They are not the call's: it ends with its
// own.
func TestCallFramesOfAnotherCall(t *testing.T) {
	url := hostileWorker(t, "mixed", func(id string) []*wire.Frame {
		return append(textChunks("other", "NOTMINE"), textChunks(id, "mine")...)
	})
	code, out, errs := toolctl(t, "--nats", url, "call", "mixed")
	if code != exitOK || out != "mine\n" {
		t.Errorf("exit %d, printed %q, want \"mine\\n\"\n%s", code, out, errs)
	}
}

// TestCallHostileFrames: a worker that answers a call twice, floods it
// after its final, or publishes frames and garbage beside its reply
// subject (the client's other inbox subjects, below and above it):
// toolctl prints the call's own output once and exits with its first
// final's code.
func TestCallHostileFrames(t *testing.T) {
	chunk := func(id string, seq uint64, s string) *wire.Frame {
		return &wire.Frame{Kind: wire.KindChunk, ID: id, Seq: seq, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: s}}}}
	}
	for _, tt := range []struct {
		name   string
		frames func(id string) []*wire.Frame
	}{
		{"two finals", func(id string) []*wire.Frame {
			return append(textChunks(id, "mine"), &wire.Frame{Kind: wire.KindFinal, ID: id, Seq: 3,
				Final: &toolkit.Response{ID: id, State: toolkit.StateError, Code: toolkit.CodeToolError, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "SECOND"}}}})
		}},
		{"a flood after the final", func(id string) []*wire.Frame {
			fs := textChunks(id, "mine")
			for i := range 10_000 {
				fs = append(fs, chunk(id, uint64(i+3), "AFTER"))
			}
			return fs
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := hostileWorker(t, "twice", tt.frames)
			code, out, errs := toolctl(t, "--nats", url, "call", "twice")
			if code != exitOK || out != "mine\n" || errs != "" {
				t.Errorf("exit %d, printed %q, want \"mine\\n\"\nstderr: %s", code, out, errs)
			}
		})
	}
	t.Run("beside the reply subject", func(t *testing.T) {
		s := natstest.Embedded(t, true)
		nc := natstest.Connect(t, s)
		send := func(subject string, f *wire.Frame) {
			data, err := wire.Msgpack.Marshal(f)
			if err != nil {
				t.Error(err)
				return
			}
			nc.Publish(subject, data)
		}
		sub, err := nc.Subscribe(wire.CallSubject("beside", ""), func(m *nats.Msg) {
			var req wire.Request
			if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
				t.Error(err)
				return
			}
			prefix := m.Reply[:strings.LastIndexByte(m.Reply, '.')]
			for _, subject := range []string{prefix, prefix + ".0", prefix + ".2", prefix + ".x.y", m.Reply + ".x"} {
				for _, f := range textChunks(req.ID, "FORGED") {
					send(subject, f)
				}
				nc.Publish(subject, []byte("\x1b[2Jgarbage"))
			}
			for _, f := range textChunks(req.ID, "mine") {
				send(m.Reply, f)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
		nc.Flush()
		code, out, errs := toolctl(t, "--nats", s.ClientURL(), "call", "beside")
		if code != exitOK || out != "mine\n" || errs != "" {
			t.Errorf("exit %d, printed %q, want \"mine\\n\"\nstderr: %s", code, out, errs)
		}
	})
}

// TestCallMillionChunks: a million one-character chunks (in bursts, as
// a worker sends them to a caller that reads them) are printed whole.
func TestCallMillionChunks(t *testing.T) {
	const bursts, per = 50, 20_000
	url := hostileWorker(t, "many", func(id string) []*wire.Frame {
		x := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}}
		more := make([]toolkit.Chunk, per-1)
		for i := range more {
			more[i] = x
		}
		var fs []*wire.Frame
		for i := range bursts {
			fs = append(fs, &wire.Frame{Kind: wire.KindChunk, ID: id, Seq: uint64(i*per + 1), Chunk: &x, More: more})
		}
		return append(fs, &wire.Frame{Kind: wire.KindFinal, ID: id, Seq: bursts*per + 1, Chunks: bursts * per,
			Final: &toolkit.Response{ID: id, State: toolkit.StateSuccess}})
	})
	code, out, errs := toolctl(t, "--nats", url, "call", "many")
	if want := strings.Repeat("x", bursts*per) + "\n"; code != exitOK || out != want || errs != "" {
		t.Errorf("exit %d, printed %d bytes, want %d\nstderr: %s", code, len(out), len(want), errs)
	}
}
