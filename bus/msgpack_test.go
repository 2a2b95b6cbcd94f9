package bus

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// libEncode is what the msgpack library writes for v with compact
// integers: the bytes the hand-written encoder must reproduce.
func libEncode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type namedString string

type point struct {
	X, Y int
}

// codecValues are metadata values of every kind the encoder writes itself,
// at the width boundaries, plus some it leaves to the library.
func codecValues() map[string]any {
	return map[string]any{
		"nil": nil, "true": true, "false": false,
		"str0": "", "str31": strings.Repeat("a", 31), "str32": strings.Repeat("a", 32),
		"str255": strings.Repeat("a", 255), "str256": strings.Repeat("a", 256),
		"str65535": strings.Repeat("a", 65535), "str65536": strings.Repeat("a", 65536),
		"bin0": []byte{}, "bin255": make([]byte, 255), "bin256": make([]byte, 256), "bin65536": make([]byte, 65536),
		"nilbin": []byte(nil), "nilarr": []any(nil), "nilmap": map[string]any(nil),
		"i0": 0, "i127": 127, "i128": 128, "i255": 255, "i256": 256, "i65535": 65535, "i65536": 65536,
		"i2^32": int64(1) << 32, "im1": -1, "im32": -32, "im33": -33, "im128": -128, "im129": -129,
		"im32768": -32768, "im32769": -32769, "imin32": int64(math.MinInt32), "imin32-1": int64(math.MinInt32) - 1,
		"imin64": int64(math.MinInt64), "i8": int8(-5), "i16": int16(-300), "i32": int32(70000),
		"u": uint(7), "u8": uint8(200), "u16": uint16(60000), "u32": uint32(1 << 31), "u64": uint64(math.MaxUint64),
		"f64": 1.5, "f64int": 2.0, "f32": float32(2.5), "nan": math.NaN(), "inf": math.Inf(-1),
		"arr":   []any{int64(1), "a", nil, []any{}, map[string]any{"k": true}},
		"arr16": make([]any, 16), "map": map[string]any{"nested": map[string]any{"x": 1.25}},
		"time": time.Unix(1700000000, 5).UTC(), "duration": 3 * time.Second,
		"named": namedString("n"), "struct": point{1, 2}, "strs": []string{"a", "b"},
	}
}

func TestAppendValueMatchesLibrary(t *testing.T) {
	for name, v := range codecValues() {
		got, err := appendValue(nil, v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := libEncode(t, v); !bytes.Equal(got, want) {
			t.Errorf("%s: wrote %x, the library writes %x", name, got[:min(len(got), 16)], want[:min(len(want), 16)])
		}
	}
}

// codecFrames are frames whose maps have at most one key, so the library's
// struct encoding (field order) is byte-comparable.
func codecFrames() []*Frame {
	blocks := []toolkit.Block{
		{Type: toolkit.BlockText, Text: "hi"},
		{Type: toolkit.BlockData, ID: "d", MediaType: "image/png", Data: "aGVsbG8=", Name: "x.png"},
		{Type: toolkit.BlockData, URL: "https://example.com/a.png"},
	}
	frames := []*Frame{
		{Kind: KindHeartbeat, ID: "c", Seq: 1},
		{Kind: KindChunk, ID: "c", Seq: 300, Chunk: &toolkit.Chunk{Content: blocks, State: toolkit.StateRunning}},
		{Kind: KindChunk, ID: "c", Seq: 2, Chunk: &toolkit.Chunk{Metadata: map[string]any{"n": int64(-7)}}},
		{Kind: KindChunk, ID: "c", Seq: 2, Chunk: &toolkit.Chunk{}},
		{Kind: KindProgress, ID: "c", Seq: 1 << 40, Progress: &toolkit.Progress{Progress: 0.5}},
		{Kind: KindProgress, ID: "c", Seq: 3, Progress: &toolkit.Progress{Progress: 1, Total: 4, Message: "step"}},
		{Kind: KindFinal, ID: "c", Seq: 9, Chunks: 8, Final: &toolkit.Response{ID: "c", State: toolkit.StateSuccess}},
		{Kind: KindFinal, ID: "c", Seq: 1, Final: &toolkit.Response{ID: "c", State: toolkit.StateError, Code: toolkit.CodeNotFound,
			Content: blocks[:1], Metadata: map[string]any{"worker": "w"}}},
		{Kind: KindFinal, ID: strings.Repeat("i", 128), Seq: 1, Final: &toolkit.Response{ID: "x", State: toolkit.StateSuccess,
			Content: make([]toolkit.Block, 17)}},
	}
	for name, v := range codecValues() {
		frames = append(frames, &Frame{Kind: KindChunk, ID: "v", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{name: v}}})
	}
	return frames
}

func TestAppendFrameMatchesLibrary(t *testing.T) {
	for _, f := range codecFrames() {
		got, err := appendFrame(nil, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := libEncode(t, f); !bytes.Equal(got, want) {
			t.Errorf("%s: wrote\n%x\nthe library writes\n%x", canonicalFrame(f), got, want)
		}
	}
	reqs := []*Request{
		{ID: "r"},
		{ID: "r", Name: "echo", Input: map[string]any{"text": "hi"}, Session: "s"},
		{ID: "r", Input: map[string]any{"n": 1.5}},
	}
	for _, r := range reqs {
		got, err := appendRequest(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if want := libEncode(t, r); !bytes.Equal(got, want) {
			t.Errorf("%+v: wrote %x, the library writes %x", r, got, want)
		}
	}
}

// TestAppendFrameExtraMetadata: the worker's instance is written into the
// final's metadata, replacing a key of the same name, without touching the
// response's map.
func TestAppendFrameExtraMetadata(t *testing.T) {
	extra := &metaEntry{key: MetaWorker, value: "w1"}
	for _, meta := range []map[string]any{nil, {}, {"a": int64(1)}, {MetaWorker: "tool's", "b": "x"}} {
		f := &Frame{Kind: KindFinal, ID: "c", Seq: 1, Final: &toolkit.Response{ID: "c", State: toolkit.StateSuccess, Metadata: meta}}
		before := fmt.Sprint(meta)
		data, err := appendFrame(nil, f, extra)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(meta) != before {
			t.Fatalf("metadata changed to %v", meta)
		}
		got, err := DecodeFrame(data, false)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{MetaWorker: "w1"}
		for k, v := range meta {
			if k != MetaWorker {
				want[k] = v
			}
		}
		if fmt.Sprint(got.Final.Metadata) != fmt.Sprint(want) {
			t.Errorf("metadata %v decoded as %v, want %v", meta, got.Final.Metadata, want)
		}
	}
}

// canonicalFrame prints a frame with its payload; %#v keeps the Go types
// of decoded values (int64 vs uint64) and fmt sorts map keys.
func canonicalFrame(f *Frame) string {
	s := fmt.Sprintf("%s %q %d %d", f.Kind, f.ID, f.Seq, f.Chunks)
	if f.Chunk != nil {
		s += fmt.Sprintf(" chunk %#v %q %#v", f.Chunk.Content, f.Chunk.State, f.Chunk.Metadata)
	}
	if f.Progress != nil {
		s += fmt.Sprintf(" progress %#v", *f.Progress)
	}
	if f.Final != nil {
		s += fmt.Sprintf(" final %q %q %q %#v %#v", f.Final.ID, f.Final.State, f.Final.Code, f.Final.Content, f.Final.Metadata)
	}
	return s
}

// sameAsLibrary checks the fast decoder against the library on one body:
// when the fast decoder accepts it, the library must too, with the same
// frame. It reports whether the fast decoder accepted.
func sameAsLibrary(t *testing.T, data []byte, alias bool) bool {
	t.Helper()
	var fast Frame
	d := decoder{b: data, alias: alias}
	if err := d.frame(&fast); err != nil || d.i != len(data) {
		return false
	}
	var ref Frame
	if err := refUnmarshalBody(data, &ref); err != nil {
		t.Fatalf("the fast decoder accepts %x, the library says %v", data, err)
	}
	if a, b := canonicalFrame(&fast), canonicalFrame(&ref); a != b {
		t.Fatalf("body %x\nfast:    %s\nlibrary: %s", data, a, b)
	}
	var req, refReq Request
	d = decoder{b: data, alias: alias}
	if err := d.request(&req); err == nil && d.i == len(data) {
		if err := refUnmarshalBody(data, &refReq); err != nil || fmt.Sprintf("%#v", req) != fmt.Sprintf("%#v", refReq) {
			t.Fatalf("request body %x\nfast:    %#v\nlibrary: %#v (%v)", data, req, refReq, err)
		}
	}
	return true
}

// libVariants re-encodes a frame the way other msgpack writers may: the
// library without compact integers (every number at full width).
func libVariants(t *testing.T, f *Frame) [][]byte {
	t.Helper()
	wide, err := msgpack.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{libEncode(t, f), wide}
}

func TestFastDecoderMatchesLibrary(t *testing.T) {
	accepted := 0
	for _, f := range codecFrames() {
		for _, data := range libVariants(t, f) {
			for _, alias := range []bool{false, true} {
				if sameAsLibrary(t, data, alias) {
					accepted++
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("the fast decoder declined everything")
	}
	// What it declines still decodes, through the library.
	heartbeat := func(seq ...byte) []byte {
		b := appendMapLen(nil, 3)
		b = appendStr(appendStr(b, "kind"), "heartbeat")
		b = appendStr(appendStr(b, "id"), "c")
		return append(appendStr(b, "seq"), seq...)
	}
	withTime, err := appendFrame(nil, &Frame{Kind: KindChunk, ID: "c", Seq: 1,
		Chunk: &toolkit.Chunk{Metadata: map[string]any{"t": time.Unix(5, 0)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	declined := map[string][]byte{
		"extension value": withTime,
		"seq as int8":     heartbeat(0xd0, 0x05),
		"nil seq":         heartbeat(0xc0),
		"too deep":        deepFrame(fastMaxDepth + 2),
	}
	for name, data := range declined {
		var fast Frame
		d := decoder{b: data}
		if err := d.frame(&fast); err == nil && d.i == len(data) {
			t.Errorf("%s: accepted by the fast decoder", name)
		}
		var got, ref Frame
		gerr := unmarshalFrame(data, &got, true)
		rerr := refUnmarshalBody(data, &ref)
		if fmt.Sprint(gerr) != fmt.Sprint(rerr) || canonicalFrame(&got) != canonicalFrame(&ref) {
			t.Errorf("%s: %s (%v), library %s (%v)", name, canonicalFrame(&got), gerr, canonicalFrame(&ref), rerr)
		}
	}
}

// deepFrame is a chunk frame whose metadata nests n arrays.
func deepFrame(n int) []byte {
	var v any = "x"
	for range n {
		v = []any{v}
	}
	data, _ := appendFrame(nil, &Frame{Kind: KindChunk, ID: "c", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{"d": v}}}, nil)
	return data
}

// TestFastDecoderBadInput: truncated, oversized and garbage bodies fail
// with the library's error, never a panic, never a huge allocation.
func TestFastDecoderBadInput(t *testing.T) {
	good, err := appendFrame(nil, codecFrames()[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{
		"empty":          nil,
		"unused code":    {0xc1},
		"map32 claims":   {0xdf, 0xff, 0xff, 0xff, 0xff},
		"array32 claims": append(appendStr(appendMapLen(nil, 1), "content"), 0xdd, 0xff, 0xff, 0xff, 0xff),
		"str32 claims":   {0x81, 0xdb, 0xff, 0xff, 0xff, 0xff},
		"trailing":       append(append([]byte{}, good...), 0xc0),
		"nil key":        {0x81, 0xc0, 0xc0},
		"int key":        {0x81, 0x01, 0xc0},
	}
	for i := 1; i < len(good); i += 7 {
		bodies[fmt.Sprintf("truncated at %d", i)] = good[:i]
	}
	for name, data := range bodies {
		var got, ref Frame
		gerr := unmarshalFrame(data, &got, false)
		rerr := refUnmarshalBody(data, &ref)
		if gerr == nil || fmt.Sprint(gerr) != fmt.Sprint(rerr) {
			t.Errorf("%s: error %v, the library says %v", name, gerr, rerr)
		}
	}
}

// FuzzFastDecoder: whatever the fast decoder accepts, the library accepts
// with the same result.
func FuzzFastDecoder(f *testing.F) {
	for _, fr := range codecFrames() {
		data, err := appendFrame(nil, fr, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsLibrary(t, data, false)
	})
}

func BenchmarkCodec(b *testing.B) {
	final := &Frame{Kind: KindFinal, ID: "call-1", Seq: 1, Final: &toolkit.Response{ID: "call-1", State: toolkit.StateSuccess,
		Content: []toolkit.Block{{Type: toolkit.BlockText, Text: strings.Repeat("x", 128)}}}}
	req := &Request{ID: "call-1", Input: map[string]any{"text": strings.Repeat("x", 128)}}
	extra := &metaEntry{key: MetaWorker, value: "w1"}
	fdata, _ := appendFrame(nil, final, extra)
	rdata, _ := appendRequest(nil, req)
	b.Run("encode-final", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendFrame(buf[:0], final, extra)
		}
	})
	b.Run("decode-final", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeFrame(fdata, false, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-final-library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f Frame
			if err := refUnmarshalBody(fdata, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-request", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendRequest(buf[:0], req)
		}
	})
	b.Run("decode-request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Request
			if err := unmarshalRequest(rdata, &r, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
