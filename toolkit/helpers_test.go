package toolkit_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// result is one call's stream, checked for shape by collect.
type result struct {
	chunks   []toolkit.Chunk
	progress []toolkit.Progress
	final    *toolkit.Response
}

func (r result) chunkText() string {
	var b strings.Builder
	for _, c := range r.chunks {
		for _, blk := range c.Content {
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

// collect runs a call to the end and checks the stream's contract: every
// event sets exactly one field, nothing follows the final, there is exactly
// one final and its ID is the call ID.
func collect(t *testing.T, tk *toolkit.Toolkit, ctx context.Context, call toolkit.ToolCall) result {
	t.Helper()
	var r result
	for ev := range tk.Call(ctx, call) {
		set := 0
		for _, p := range []bool{ev.Chunk != nil, ev.Progress != nil, ev.Final != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			t.Errorf("event %+v sets %d fields, want 1", ev, set)
		}
		if r.final != nil {
			t.Errorf("event after the final response: %+v", ev)
		}
		switch {
		case ev.Chunk != nil:
			r.chunks = append(r.chunks, *ev.Chunk)
		case ev.Progress != nil:
			r.progress = append(r.progress, *ev.Progress)
		case ev.Final != nil:
			r.final = ev.Final
		}
	}
	if r.final == nil {
		t.Fatalf("call %q: no final response", call.Name)
	}
	if r.final.ID != call.ID {
		t.Errorf("final ID = %q, want the call ID %q", r.final.ID, call.ID)
	}
	return r
}

// newToolkit returns a Toolkit whose log goes to the test log.
func newToolkit(t *testing.T, opts *toolkit.Options) *toolkit.Toolkit {
	t.Helper()
	if opts == nil {
		opts = &toolkit.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	return toolkit.New(opts)
}

// testWriter sends log output to t.Log, so it shows only for failures
// and -v.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func mustAdd(t *testing.T, tk *toolkit.Toolkit, tool *toolkit.Tool, opts ...toolkit.Option) {
	t.Helper()
	if err := tk.Add(tool, opts...); err != nil {
		t.Fatalf("Add(%s): %v", tool.Name, err)
	}
}

func mustAddGroup(t *testing.T, tk *toolkit.Toolkit, g toolkit.Group) {
	t.Helper()
	if err := tk.AddGroup(g); err != nil {
		t.Fatalf("AddGroup(%s): %v", g.Name, err)
	}
}

func objectSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	}
	return s
}

// writes is a raw tool that writes the given chunks and returns err.
func writes(name string, err error, chunks ...toolkit.Chunk) *toolkit.Tool {
	return toolkit.Raw(name, "Writes fixed chunks.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for _, c := range chunks {
			if werr := w.Write(c); werr != nil {
				return werr
			}
		}
		return err
	})
}

// jsonEqual compares two values by their JSON form, so []string and []any
// (or int and float64) compare as the model would see them.
func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: marshal got: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("%s: marshal want: %v", what, err)
	}
	var gv, wv any
	_ = json.Unmarshal(g, &gv)
	_ = json.Unmarshal(w, &wv)
	if !reflect.DeepEqual(gv, wv) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func textBlock(id, text string) toolkit.Block {
	return toolkit.Block{Type: toolkit.BlockText, ID: id, Text: text}
}

func dataBlock(id, mediaType, data string) toolkit.Block {
	return toolkit.Block{Type: toolkit.BlockData, ID: id, MediaType: mediaType, Data: data}
}

func chunkOf(blocks ...toolkit.Block) toolkit.Chunk {
	return toolkit.Chunk{Content: blocks, State: toolkit.StateRunning}
}
