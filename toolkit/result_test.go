package toolkit_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

func TestAccumulator(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	st := func(s toolkit.State, blocks ...toolkit.Block) toolkit.Chunk {
		return toolkit.Chunk{Content: blocks, State: s}
	}
	tests := []struct {
		name      string
		chunks    []toolkit.Chunk
		want      []toolkit.Block
		wantState toolkit.State
		wantMeta  map[string]any
		wantErr   bool
	}{
		{
			name:      "empty",
			wantState: toolkit.StateSuccess,
		},
		{
			name:      "text by id, consecutive text merged into the first id",
			chunks:    []toolkit.Chunk{chunkOf(textBlock("a", "1")), chunkOf(textBlock("b", "2")), chunkOf(textBlock("a", "3"))},
			want:      []toolkit.Block{textBlock("a", "123")},
			wantState: toolkit.StateSuccess,
		},
		{
			name: "text separated by data is not merged",
			chunks: []toolkit.Chunk{
				chunkOf(textBlock("a", "x")), chunkOf(dataBlock("d", "image/png", b64("img"))), chunkOf(textBlock("b", "y")), chunkOf(textBlock("a", "z")),
			},
			want:      []toolkit.Block{textBlock("a", "xz"), dataBlock("d", "image/png", b64("img")), textBlock("b", "y")},
			wantState: toolkit.StateSuccess,
		},
		{
			name:      "blocks without ids never merge by id, adjacent text still merges",
			chunks:    []toolkit.Chunk{chunkOf(dataBlock("", "a/b", b64("1"))), chunkOf(dataBlock("", "a/b", b64("2"))), chunkOf(textBlock("", "p")), chunkOf(textBlock("", "q"))},
			want:      []toolkit.Block{dataBlock("", "a/b", b64("1")), dataBlock("", "a/b", b64("2")), textBlock("", "pq")},
			wantState: toolkit.StateSuccess,
		},
		{
			name: "data merged by bytes; newest name and media type win; empty ones do not erase",
			chunks: []toolkit.Chunk{
				chunkOf(toolkit.Block{Type: toolkit.BlockData, ID: "d", MediaType: "audio/wav", Name: "a.wav", Data: b64("a")}),
				chunkOf(toolkit.Block{Type: toolkit.BlockData, ID: "d", MediaType: "audio/x-wav", Data: b64("bc")}),
				chunkOf(toolkit.Block{Type: toolkit.BlockData, ID: "d", Name: "final.wav", Data: b64("d")}),
			},
			want:      []toolkit.Block{{Type: toolkit.BlockData, ID: "d", MediaType: "audio/x-wav", Name: "final.wav", Data: b64("abcd")}},
			wantState: toolkit.StateSuccess,
		},
		{
			name:      "invalid base64 falls back to string concatenation",
			chunks:    []toolkit.Chunk{chunkOf(dataBlock("d", "x/y", b64("hi"))), chunkOf(dataBlock("d", "x/y", "***"))},
			want:      []toolkit.Block{dataBlock("d", "x/y", b64("hi")+"***")},
			wantState: toolkit.StateSuccess,
		},
		{
			name:      "concatenated pieces that become valid base64 merge by bytes again",
			chunks:    []toolkit.Chunk{chunkOf(dataBlock("d", "x/y", "aGV")), chunkOf(dataBlock("d", "x/y", "sbG8=")), chunkOf(dataBlock("d", "x/y", b64("!")))},
			want:      []toolkit.Block{dataBlock("d", "x/y", b64("hello!"))},
			wantState: toolkit.StateSuccess,
		},
		{
			name:      "another type under the same id is appended under a new id",
			chunks:    []toolkit.Chunk{chunkOf(dataBlock("x", "a/b", b64("1"))), chunkOf(textBlock("x", "t"))},
			want:      []toolkit.Block{dataBlock("x", "a/b", b64("1")), textBlock("x-1", "t")},
			wantState: toolkit.StateSuccess,
		},
		{
			name: "URL data under an existing id is an error; the rest of the chunk still applies",
			chunks: []toolkit.Chunk{
				chunkOf(toolkit.Block{Type: toolkit.BlockData, ID: "u", URL: "https://a"}),
				chunkOf(toolkit.Block{Type: toolkit.BlockData, ID: "u", URL: "https://b"}, textBlock("t", "after")),
			},
			want:      []toolkit.Block{{Type: toolkit.BlockData, ID: "u", URL: "https://a"}, textBlock("t", "after")},
			wantState: toolkit.StateSuccess,
			wantErr:   true,
		},
		{
			name: "text is merged after each chunk: an id is found until its block is merged away",
			chunks: []toolkit.Chunk{
				chunkOf(textBlock("", "x")),
				chunkOf(textBlock("k", "y"), dataBlock("d", "a/b", b64("1")), textBlock("k", "z")),
				chunkOf(textBlock("k", "!")),
			},
			want:      []toolkit.Block{textBlock("", "xyz"), dataBlock("d", "a/b", b64("1")), textBlock("k", "!")},
			wantState: toolkit.StateSuccess,
		},
		{
			name: "the same blocks in separate chunks",
			chunks: []toolkit.Chunk{
				chunkOf(textBlock("", "x")), chunkOf(textBlock("k", "y")), chunkOf(dataBlock("d", "a/b", b64("1"))), chunkOf(textBlock("k", "z")),
			},
			want:      []toolkit.Block{textBlock("", "xy"), dataBlock("d", "a/b", b64("1")), textBlock("k", "z")},
			wantState: toolkit.StateSuccess,
		},
		{
			name: "many text pieces, with and without ids, around data",
			chunks: []toolkit.Chunk{
				chunkOf(textBlock("", "a"), textBlock("", "b")), chunkOf(textBlock("", "c")), chunkOf(textBlock("t", "d")),
				chunkOf(dataBlock("", "a/b", b64("1"))), chunkOf(textBlock("", "e")), chunkOf(textBlock("", "f"), textBlock("u", "g")),
				chunkOf(textBlock("u", "h")),
			},
			want:      []toolkit.Block{textBlock("", "abcd"), dataBlock("", "a/b", b64("1")), textBlock("", "efgh")},
			wantState: toolkit.StateSuccess,
		},
		{
			name:      "error is sticky",
			chunks:    []toolkit.Chunk{st(toolkit.StateError), st(toolkit.StateInterrupted), st(toolkit.StateDenied), st(toolkit.StateSuccess), st(toolkit.StateRunning)},
			wantState: toolkit.StateError,
		},
		{
			name:      "later interrupted wins over denied",
			chunks:    []toolkit.Chunk{st(toolkit.StateDenied), st(toolkit.StateInterrupted), st(toolkit.StateRunning)},
			wantState: toolkit.StateInterrupted,
		},
		{
			name:      "later denied wins over interrupted",
			chunks:    []toolkit.Chunk{st(toolkit.StateInterrupted), st(toolkit.StateDenied)},
			wantState: toolkit.StateDenied,
		},
		{
			name:      "running and success leave success",
			chunks:    []toolkit.Chunk{st(toolkit.StateRunning), st(toolkit.StateSuccess), st("")},
			wantState: toolkit.StateSuccess,
		},
		{
			name: "metadata: last write wins per key",
			chunks: []toolkit.Chunk{
				{Metadata: map[string]any{"a": 1, "b": 1}}, {Metadata: map[string]any{"b": 2, "c": 3}},
			},
			wantState: toolkit.StateSuccess,
			wantMeta:  map[string]any{"a": 1, "b": 2, "c": 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acc toolkit.Accumulator
			var gotErr error
			for i := range tt.chunks {
				if err := acc.Add(&tt.chunks[i]); err != nil && gotErr == nil {
					gotErr = err
				}
			}
			if (gotErr != nil) != tt.wantErr {
				t.Errorf("Add error = %v, wantErr %v", gotErr, tt.wantErr)
			}
			r := acc.Response("id")
			jsonEqual(t, "content", r.Content, tt.want)
			if r.State != tt.wantState || acc.State() != tt.wantState {
				t.Errorf("state = %q, want %q", r.State, tt.wantState)
			}
			if acc.Len() != len(tt.want) {
				t.Errorf("Len = %d, want %d", acc.Len(), len(tt.want))
			}
			if tt.wantMeta != nil {
				jsonEqual(t, "metadata", r.Metadata, tt.wantMeta)
			}
		})
	}
}

// The accumulator copies what it keeps: changing a chunk after Add, or a
// response after Response, changes nothing inside it.
func TestAccumulatorCopies(t *testing.T) {
	var acc toolkit.Accumulator
	c := toolkit.Chunk{Content: []toolkit.Block{textBlock("a", "x")}, Metadata: map[string]any{"k": "v"}}
	_ = acc.Add(&c)
	c.Content[0].Text = "changed"
	c.Metadata["k"] = "changed"
	r := acc.Response("1")
	r.Metadata["k"] = "mutated"
	r.Content[0].Text = "mutated"
	r2 := acc.Response("2")
	if r2.Text() != "x" || r2.Metadata["k"] != "v" {
		t.Errorf("response = %+v", r2)
	}
	// Still usable after Response.
	_ = acc.Add(&toolkit.Chunk{Content: []toolkit.Block{textBlock("a", "y")}})
	if got := acc.Response("3").Text(); got != "xy" {
		t.Errorf("after more chunks: %q", got)
	}
}

// Responses taken while text keeps coming keep the text they had: the
// accumulator shares its buffer with the strings it returns and copies it
// before writing again.
func TestAccumulatorResponsesStable(t *testing.T) {
	var acc toolkit.Accumulator
	var got []*toolkit.Response
	var want []string
	all := ""
	for i := range 60 {
		piece := strings.Repeat(string(rune('a'+i%26)), i%7)
		_ = acc.Add(&toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: piece}}})
		all += piece
		got = append(got, acc.Response("x"))
		want = append(want, all)
	}
	for i := range got {
		if got[i].Text() != want[i] {
			t.Fatalf("response %d: %q, want %q", i, got[i].Text(), want[i])
		}
	}
}

// refBlock and refAccumulate are a naive model of the accumulation rules
// for text and data blocks: fold each block of a chunk in, then merge
// consecutive text blocks, after every chunk.
type refBlock struct {
	typ  toolkit.BlockType
	id   string
	text string
	data []byte
}

func refAccumulate(chunks []toolkit.Chunk) []refBlock {
	var out []refBlock
	renamed := 0
	for _, c := range chunks {
	blocks:
		for _, b := range c.Content {
			data, _ := base64.StdEncoding.DecodeString(b.Data)
			if b.ID != "" {
				for i := range out {
					if out[i].id != b.ID {
						continue
					}
					switch {
					case out[i].typ != b.Type:
						renamed++
						out = append(out, refBlock{b.Type, fmt.Sprintf("%s-%d", b.ID, renamed), b.Text, data})
					case b.Type == toolkit.BlockText:
						out[i].text += b.Text
					default:
						out[i].data = append(out[i].data, data...)
					}
					continue blocks
				}
			}
			out = append(out, refBlock{b.Type, b.ID, b.Text, data})
		}
		var merged []refBlock
		for _, b := range out {
			if n := len(merged); n > 0 && b.typ == toolkit.BlockText && merged[n-1].typ == toolkit.BlockText {
				merged[n-1].text += b.text
				continue
			}
			merged = append(merged, b)
		}
		out = merged
	}
	return out
}

// TestAccumulatorMatchesModel folds random chunks of text and data blocks
// with a few shared ids and compares the result with the naive model.
func TestAccumulatorMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"", "", "", "a", "b"}
	for round := range 2000 {
		var chunks []toolkit.Chunk
		for range rng.IntN(8) {
			var c toolkit.Chunk
			for range rng.IntN(4) {
				id := ids[rng.IntN(len(ids))]
				piece := string(rune('a' + rng.IntN(26)))
				if rng.IntN(4) == 0 {
					c.Content = append(c.Content, dataBlock(id, "a/b", base64.StdEncoding.EncodeToString([]byte(piece))))
				} else {
					c.Content = append(c.Content, textBlock(id, piece))
				}
			}
			chunks = append(chunks, c)
		}
		var acc toolkit.Accumulator
		for i := range chunks {
			_ = acc.Add(&chunks[i])
			if rng.IntN(3) == 0 {
				acc.Response("mid") // taking a response must change nothing
			}
		}
		got := acc.Response("x").Content
		want := refAccumulate(chunks)
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			data, _ := base64.StdEncoding.DecodeString(got[i].Data)
			same = got[i].Type == want[i].typ && got[i].ID == want[i].id && got[i].Text == want[i].text && string(data) == string(want[i].data)
		}
		if !same {
			t.Fatalf("round %d: chunks %+v\naccumulated %+v\nmodel %+v", round, chunks, got, want)
		}
	}
}

// BenchmarkAccumulatorText folds 100 text chunks of 1KiB, as a streaming
// call's caller does.
func BenchmarkAccumulatorText(b *testing.B) {
	c := toolkit.Text(strings.Repeat("x", 1024))
	b.ReportAllocs()
	for b.Loop() {
		var acc toolkit.Accumulator
		for range 100 {
			_ = acc.Add(&c)
		}
		if r := acc.Response("x"); len(r.Content[0].Text) != 100*1024 {
			b.Fatal(len(r.Content[0].Text))
		}
	}
}

func TestValueChunk(t *testing.T) {
	type pair struct {
		A string `json:"a"`
		B int    `json:"b"`
	}
	c := toolkit.Text("pre-made")
	tests := []struct {
		in   any
		want string
		none bool
	}{
		{in: "plain <text>", want: "plain <text>"},
		{in: nil, want: "null"},
		{in: (*toolkit.Chunk)(nil), none: true},
		{in: c, want: "pre-made"},
		{in: &c, want: "pre-made"},
		{in: 42, want: "42"},
		{in: []string{"成都", "<b>"}, want: `["成都", "<b>"]`},
		{in: pair{"x", 1}, want: `{"a": "x", "b": 1}`},
		// Python's separators outside strings only; escapes kept.
		{in: map[string]any{"k:,": `say "a, b": c\`, "n": []any{1, map[string]any{}}}, want: `{"k:,": "say \"a, b\": c\\", "n": [1, {}]}`},
		{in: func() {}, want: "0x"}, // not JSON: printed
	}
	for _, tt := range tests {
		got, err := toolkit.ValueChunk(tt.in)
		if err != nil {
			t.Errorf("ValueChunk(%T): %v", tt.in, err)
			continue
		}
		if tt.none {
			if got.Content != nil {
				t.Errorf("ValueChunk(%#v) = %+v, want nothing", tt.in, got)
			}
			continue
		}
		text := got.Content[0].Text
		if tt.want == "0x" {
			if len(text) < 2 || text[:2] != "0x" {
				t.Errorf("ValueChunk(func) = %q, want its printed form", text)
			}
			continue
		}
		if text != tt.want {
			t.Errorf("ValueChunk(%#v) = %q, want %q", tt.in, text, tt.want)
		}
	}
	// A nil *Chunk result writes no chunk and succeeds.
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("nothing", "N.", func(ctx context.Context, in struct{}) (*toolkit.Chunk, error) { return nil, nil }))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "nothing"})
	if len(r.chunks) != 0 || r.final.State != toolkit.StateSuccess || r.final.Content != nil {
		t.Errorf("nil result: %d chunks, %+v", len(r.chunks), r.final)
	}
}

func TestErrors(t *testing.T) {
	wrapped := fmt.Errorf("outer: %w", toolkit.NewError(toolkit.CodeDenied, "no"))
	tests := []struct {
		err  error
		want toolkit.Code
	}{
		{nil, ""},
		{errors.New("x"), toolkit.CodeToolError},
		{context.Canceled, toolkit.CodeInterrupted},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), toolkit.CodeTimeout},
		{wrapped, toolkit.CodeDenied},
		{&toolkit.Error{Message: "no code"}, toolkit.CodeToolError},
		{toolkit.Errorf(toolkit.CodeUnavailable, "down: %w", context.Canceled), toolkit.CodeUnavailable},
	}
	for _, tt := range tests {
		if got := toolkit.CodeOf(tt.err); got != tt.want {
			t.Errorf("CodeOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	e := toolkit.Errorf(toolkit.CodeUnavailable, "down: %w", context.Canceled)
	if !errors.Is(e, context.Canceled) || e.Error() != "down: context canceled" {
		t.Errorf("Errorf: %v, unwraps to Canceled: %v", e, errors.Is(e, context.Canceled))
	}
	if !errors.Is(wrapped, &toolkit.Error{Code: toolkit.CodeDenied}) || errors.Is(wrapped, &toolkit.Error{Code: toolkit.CodeTimeout}) {
		t.Error("errors.Is by code")
	}
	if (&toolkit.Error{Code: toolkit.CodeTimeout}).Error() != "timeout" {
		t.Error("an Error without a message reads as its code")
	}
	for _, c := range []toolkit.Code{toolkit.CodeNotFound, toolkit.CodeGroupInactive, toolkit.CodeInvalidInput,
		toolkit.CodeDenied, toolkit.CodeApprovalRequired, toolkit.CodeTimeout, toolkit.CodeInterrupted,
		toolkit.CodeToolError, toolkit.CodeUnavailable, toolkit.CodeOverloaded, toolkit.CodeWorkerLost, toolkit.CodeInternal} {
		if !c.Valid() {
			t.Errorf("%q not valid", c)
		}
	}
	if toolkit.Code("teapot").Valid() || toolkit.Code("").Valid() {
		t.Error("unknown codes are valid")
	}
	states := map[toolkit.Code]toolkit.State{
		"": toolkit.StateSuccess, toolkit.CodeInterrupted: toolkit.StateInterrupted, toolkit.CodeDenied: toolkit.StateDenied,
		toolkit.CodeApprovalRequired: toolkit.StateDenied, toolkit.CodeTimeout: toolkit.StateError, toolkit.CodeInternal: toolkit.StateError,
	}
	for c, s := range states {
		if c.State() != s {
			t.Errorf("%q.State() = %q, want %q", c, c.State(), s)
		}
	}
	ok := &toolkit.Response{State: toolkit.StateSuccess}
	if ok.Err() != nil {
		t.Error("success has an Err")
	}
}
