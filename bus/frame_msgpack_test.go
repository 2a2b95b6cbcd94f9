package bus

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/toolkit"
)

// reflectFrame has Frame's fields and tags but not its EncodeMsgpack, so
// msgpack encodes it by reflection: the reference bytes.
type reflectFrame Frame

func TestFrameMsgpackSameBytes(t *testing.T) {
	text := toolkit.Block{Type: toolkit.BlockText, Text: "hi"}
	full := toolkit.Block{Type: toolkit.BlockData, ID: "b1", Text: "t", MediaType: "image/png", Data: "AAAA", URL: "http://x/y", Name: "n"}
	frames := []*Frame{
		{Kind: KindHeartbeat, ID: "c1", Seq: 7},
		{Kind: KindHeartbeat, Seq: 1},
		{Kind: KindChunk, ID: "c1", Seq: 1, Chunk: &toolkit.Chunk{}},
		{Kind: KindChunk, ID: "c1", Seq: 2, Chunk: &toolkit.Chunk{Content: []toolkit.Block{text, full, {}}, State: toolkit.StateRunning}},
		{Kind: KindChunk, ID: "c1", Seq: 300, Chunk: &toolkit.Chunk{Metadata: map[string]any{"k": []any{1, "two", 3.5, nil, map[string]any{"x": true}}}}},
		{Kind: KindProgress, ID: "c1", Seq: 1 << 20, Progress: &toolkit.Progress{}},
		{Kind: KindProgress, ID: "c1", Seq: 1 << 40, Progress: &toolkit.Progress{Progress: 0.5, Total: 2, Message: "half"}},
		{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{ID: "c1", State: toolkit.StateSuccess, Content: []toolkit.Block{text}, Metadata: map[string]any{"worker": "w1"}}},
		{Kind: KindFinal, ID: "c1", Seq: 9, Chunks: 8, Final: &toolkit.Response{ID: "c1", State: toolkit.StateError, Code: toolkit.CodeTimeout}},
		{Kind: KindFinal, ID: strings.Repeat("a", MaxCallIDLen), Seq: 2, Final: &toolkit.Response{}},
		{Kind: "bogus", Seq: 0, Chunk: &toolkit.Chunk{State: toolkit.StateError}, Progress: &toolkit.Progress{Total: -1}, Final: &toolkit.Response{Content: []toolkit.Block{}}},
	}
	for i, f := range frames {
		got, err := msgpack.Marshal(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want, err := msgpack.Marshal((*reflectFrame)(f))
		if err != nil {
			t.Fatalf("frame %d by reflection: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("frame %d: %x\nwant %x", i, got, want)
		}
	}
}

// TestFrameMsgpackRoundTrip covers metadata with several keys, whose map
// order differs from one encoding to the next: the decoded frames must be
// equal.
func TestFrameMsgpackRoundTrip(t *testing.T) {
	f := &Frame{Kind: KindFinal, ID: "c1", Seq: 3, Final: &toolkit.Response{ID: "c1", State: toolkit.StateSuccess,
		Content:  []toolkit.Block{{Type: toolkit.BlockText, Text: "ok"}},
		Metadata: map[string]any{"worker": "w", "a": "b", "n": uint64(3), "nested": map[string]any{"x": "y"}}}}
	data, err := EncodeFrame(f, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFrame(data, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := msgpack.Marshal((*reflectFrame)(f))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := DecodeFrame(want, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ref) {
		t.Errorf("decoded %+v\nwant %+v", got, ref)
	}
}

func BenchmarkEncodeFrame(b *testing.B) {
	f := &Frame{Kind: KindFinal, ID: "Ab3xYz0123456789abcdef", Seq: 1, Final: &toolkit.Response{ID: "Ab3xYz0123456789abcdef", State: toolkit.StateSuccess,
		Content: []toolkit.Block{{Type: toolkit.BlockText, Text: strings.Repeat("x", 128)}}, Metadata: map[string]any{"worker": "W123456789"}}}
	for _, enc := range []struct {
		name string
		v    any
	}{{"direct", f}, {"reflection", (*reflectFrame)(f)}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := msgpack.Marshal(enc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
