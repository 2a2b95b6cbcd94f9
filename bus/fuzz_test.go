package bus_test

import (
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoder: it must never
// panic, and a frame it accepts must survive an encode/decode round trip
// unchanged. The seed corpus is in testdata/fuzz/FuzzDecodeFrame.
func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range seedFrames() {
		for _, json := range []bool{false, true} {
			data, err := bus.EncodeFrame(fr, json)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, json)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		fr, err := bus.DecodeFrame(data, json)
		if err != nil {
			return
		}
		again, err := bus.EncodeFrame(fr, json)
		if err != nil {
			t.Fatalf("an accepted frame does not encode: %v", err)
		}
		fr2, err := bus.DecodeFrame(again, json)
		if err != nil {
			t.Fatalf("a re-encoded frame does not decode: %v", err)
		}
		if a, b := canonical(fr), canonical(fr2); a != b {
			t.Fatalf("round trip changed the frame:\n%s\n%s", a, b)
		}
	})
}

// canonical prints a frame with its payload (fmt sorts map keys).
func canonical(f *bus.Frame) string {
	s := fmt.Sprintf("%s %q %d %d", f.Kind, f.ID, f.Seq, f.Chunks)
	if f.Chunk != nil {
		s += fmt.Sprintf(" chunk %+v", *f.Chunk)
	}
	if f.Progress != nil {
		s += fmt.Sprintf(" progress %+v", *f.Progress)
	}
	if f.Final != nil {
		s += fmt.Sprintf(" final %+v", *f.Final)
	}
	return s
}

func seedFrames() []*bus.Frame {
	return []*bus.Frame{
		{Kind: bus.KindChunk, ID: "c1", Seq: 1, Chunk: &toolkit.Chunk{State: toolkit.StateRunning, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "hi"}}}},
		{Kind: bus.KindChunk, ID: "c1", Seq: 2, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "d", MediaType: "image/png", Data: "aGVsbG8="}}, Metadata: map[string]any{"n": int64(1), "f": 1.5, "l": []any{"a", true, nil}}}},
		{Kind: bus.KindProgress, ID: "c1", Seq: 3, Progress: &toolkit.Progress{Progress: 1, Total: 4, Message: "step"}},
		{Kind: bus.KindHeartbeat, ID: "c1", Seq: 4},
		{Kind: bus.KindFinal, ID: "c1", Seq: 5, Chunks: 2, Final: &toolkit.Response{ID: "c1", State: toolkit.StateSuccess, Metadata: map[string]any{"worker": "w1"}}},
		{Kind: bus.KindFinal, ID: "c2", Seq: 1, Final: &toolkit.Response{ID: "c2", State: toolkit.StateError, Code: toolkit.CodeNotFound, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "ToolNotFoundError"}}}},
	}
}

func TestDecodeFrameRejects(t *testing.T) {
	final := &toolkit.Response{ID: "x", State: toolkit.StateSuccess}
	cases := []struct {
		name string
		f    *bus.Frame
	}{
		{"zero seq", &bus.Frame{Kind: bus.KindHeartbeat, ID: "x"}},
		{"unknown kind", &bus.Frame{Kind: "bogus", ID: "x", Seq: 1}},
		{"final without response", &bus.Frame{Kind: bus.KindFinal, ID: "x", Seq: 1}},
		{"chunk with a final", &bus.Frame{Kind: bus.KindChunk, ID: "x", Seq: 1, Chunk: &toolkit.Chunk{}, Final: final}},
		{"heartbeat with payload", &bus.Frame{Kind: bus.KindHeartbeat, ID: "x", Seq: 1, Progress: &toolkit.Progress{}}},
		{"unknown code", &bus.Frame{Kind: bus.KindFinal, ID: "x", Seq: 1, Final: &toolkit.Response{Code: "teapot"}}},
	}
	for _, tc := range cases {
		for _, json := range []bool{false, true} {
			data, err := bus.EncodeFrame(tc.f, json)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bus.DecodeFrame(data, json); err == nil {
				t.Errorf("%s (json %v): accepted", tc.name, json)
			}
		}
	}
	for _, garbage := range [][]byte{nil, {0xc1}, []byte("{"), {0x81, 0xa4}} {
		if _, err := bus.DecodeFrame(garbage, false); err == nil {
			t.Errorf("garbage %x accepted", garbage)
		}
	}
}

// TestMsgpackInterop: the hand-written codec and msgpack's reflection
// codec (struct tags, as another client might produce) read each other.
func TestMsgpackInterop(t *testing.T) {
	for _, f := range seedFrames() {
		reflected, err := msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bus.DecodeFrame(reflected, false)
		if err != nil {
			t.Fatalf("%s: %v", f.Kind, err)
		}
		if canonical(got) != canonical(f) {
			t.Fatalf("reflection-encoded %s decoded as\n%s\nwant\n%s", f.Kind, canonical(got), canonical(f))
		}
		fast, err := bus.EncodeFrame(f, false)
		if err != nil {
			t.Fatal(err)
		}
		var back bus.Frame
		if err := msgpack.Unmarshal(fast, &back); err != nil {
			t.Fatalf("%s: %v", f.Kind, err)
		}
		if canonical(&back) != canonical(f) {
			t.Fatalf("fast-encoded %s read back by reflection as\n%s\nwant\n%s", f.Kind, canonical(&back), canonical(f))
		}
	}
	req := &bus.Request{ID: "r1", Name: "echo", Input: map[string]any{"text": "hi", "n": int64(3), "nested": map[string]any{"a": []any{true}}}, Session: "s"}
	data, err := msgpack.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got bus.Request
	if err := bus.DecodeRequest(data, false, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(*req) {
		t.Fatalf("request %v, want %v", got, *req)
	}
}
