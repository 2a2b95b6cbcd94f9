package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// The generated codec against the msgpack library's reflection on the
// same struct tags: byte-identical encoding, and a decoder that accepts
// nothing the library would read differently.

// libEncode is what the msgpack library writes for v with compact
// integers: the bytes the generated encoder must reproduce.
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

// libDecode decodes a whole body into v with the library, as a reference.
func libDecode(data []byte, v any) error {
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	dec.UseLooseInterfaceDecoding(true)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if r.Len() > 0 {
		return fmt.Errorf("trailing bytes after the body")
	}
	return nil
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
// encoding is byte-comparable.
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
		{Kind: KindChunk, ID: "c", Seq: 2, Chunk: &toolkit.Chunk{Content: blocks[:1]}},
		{Kind: KindChunk, ID: "c", Seq: 2, Chunk: &toolkit.Chunk{Content: blocks[:1]}, More: []toolkit.Chunk{{Content: blocks}, {Metadata: map[string]any{"n": int64(1)}}}},
		{Kind: KindProgress, ID: "c", Seq: 1 << 40, Progress: &toolkit.Progress{Progress: 0.5}},
		{Kind: KindProgress, ID: "c", Seq: 3, Progress: &toolkit.Progress{Progress: 1, Total: 4, Message: "step"}},
		{Kind: KindLog, ID: "c", Seq: 4, Log: &toolkit.LogMessage{Level: "info", Logger: "fetch", Data: map[string]any{"url": "x"}}},
		{Kind: KindLog, ID: "c", Seq: 5, Log: &toolkit.LogMessage{Level: "error", Data: "plain text"}},
		{Kind: KindLog, ID: "c", Seq: 6, Log: &toolkit.LogMessage{Level: "debug"}},
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

// codecMessages are the other messages, with at most one key per map.
func codecMessages() []Message {
	params := map[string]any{"type": "object"}
	return []Message{
		&Request{ID: "r"},
		&Request{ID: "r", Name: "echo", Input: map[string]any{"text": "hi"}, Session: "s"},
		&Request{ID: "r", Input: map[string]any{"n": 1.5}},
		&ListRequest{}, &ListRequest{Session: "s"},
		&ListReply{Worker: "w"},
		&ListReply{Worker: "w", Tools: []string{"echo", "reset_tools"}, Schemas: []toolkit.FunctionSchema{
			{Type: "function", Function: toolkit.Function{Name: "echo", Description: "Echo.", Parameters: params}}}},
		&ListReply{Error: "GroupStateError: down"},
		&Announcement{Format: 1, Instance: "w1", EpochMS: 1796021799257, Seq: 2, IntervalMS: 2000,
			Groups: []AnnouncedGroup{{Name: "web", Description: "Web.", Instructions: "Cite.", Active: true}},
			Tools: []AnnouncedTool{{Name: "echo", Description: "Echo.", Group: "basic", ReadOnly: true, ConcurrencySafe: true,
				Idempotency: "no_side_effects", Parameters: params}},
			Meta: map[string]any{MetaPermissions: map[string]any{"mode": "default"}}},
		&Announcement{Format: 1, Instance: "w1", Goodbye: true, Groups: []AnnouncedGroup{}, Tools: []AnnouncedTool{}},
		&SkillRequest{Name: "pdf"}, &SkillRequest{Name: "pdf", Group: "docs"},
		&SkillReply{Markdown: "# PDF"}, &SkillReply{Error: "SkillNotFoundError"},
		&HeadersRequest{Server: "search", Headers: map[string]string{"Authorization": "Bearer x"}},
		&HeadersRequest{Server: "search"},
		&HeadersReply{OK: true}, &HeadersReply{Error: "no such server"},
		&MCPRequest{Server: "docs", Method: "resources/read", Params: map[string]any{"uri": "file:///a"}, ID: "q1"},
		&MCPRequest{Server: "docs", Method: MCPCancelled, Params: map[string]any{"requestId": "q1"}},
		&MCPRequest{Server: "docs", Method: "prompts/list"},
		&MCPReply{Result: map[string]any{"contents": []any{map[string]any{"uri": "file:///a"}, "x"}}},
		&MCPReply{Code: -32002, Error: "resource not found"},
		&MCPUpdate{Server: "docs", URI: "file:///a"},
	}
}

func TestEncodeMatchesLibrary(t *testing.T) {
	for _, f := range codecFrames() {
		got, err := Msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := libEncode(t, f); !bytes.Equal(got, want) {
			t.Errorf("%s: wrote\n%x\nthe library writes\n%x", canonical(f), got, want)
		}
	}
	for _, m := range codecMessages() {
		got, err := Msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if want := libEncode(t, m); !bytes.Equal(got, want) {
			t.Errorf("%#v: wrote\n%x\nthe library writes\n%x", m, got, want)
		}
	}
}

// TestAppendFrameExtraMetadata: the worker's instance is written into the
// final's metadata, replacing a key of the same name, without touching the
// response's map.
func TestAppendFrameExtraMetadata(t *testing.T) {
	extra := &MetaEntry{Key: MetaWorker, Value: "w1"}
	for _, meta := range []map[string]any{nil, {}, {"a": int64(1)}, {MetaWorker: "tool's", "b": "x"}} {
		f := &Frame{Kind: KindFinal, ID: "c", Seq: 1, Final: &toolkit.Response{ID: "c", State: toolkit.StateSuccess, Metadata: meta}}
		before := fmt.Sprint(meta)
		data, err := AppendFrame(nil, f, extra)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(meta) != before {
			t.Fatalf("metadata changed to %v", meta)
		}
		var got Frame
		if err := Msgpack.Unmarshal(data, &got); err != nil {
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

// canonical prints a frame with its payload; %#v keeps the Go types of
// decoded values (int64 vs uint64) and fmt sorts map keys.
func canonical(f *Frame) string {
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

// sameAsLibrary checks the decoder against the library on one body: when
// the decoder accepts it as a frame (or a request), the library must too,
// with the same result. It reports whether the decoder accepted a frame.
func sameAsLibrary(t *testing.T, data []byte, shared bool) bool {
	t.Helper()
	var req, libReq Request
	if err := Msgpack.decode(data, &req, shared); err == nil {
		if err := libDecode(data, &libReq); err != nil || fmt.Sprintf("%#v", req) != fmt.Sprintf("%#v", libReq) {
			t.Fatalf("request body %x\nours:    %#v\nlibrary: %#v (%v)", data, req, libReq, err)
		}
	}
	var f, lib Frame
	if err := Msgpack.decode(data, &f, shared); err != nil {
		return false
	}
	if err := libDecode(data, &lib); err != nil {
		t.Fatalf("the decoder accepts %x, the library says %v", data, err)
	}
	if a, b := canonical(&f), canonical(&lib); a != b {
		t.Fatalf("body %x\nours:    %s\nlibrary: %s", data, a, b)
	}
	return true
}

// libVariants re-encodes a frame the way other msgpack writers may: the
// library with compact integers, and without (every number at full
// width).
func libVariants(t *testing.T, f *Frame) [][]byte {
	t.Helper()
	wide, err := msgpack.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{libEncode(t, f), wide}
}

func TestDecoderMatchesLibrary(t *testing.T) {
	for _, f := range codecFrames() {
		for _, data := range libVariants(t, f) {
			for _, shared := range []bool{false, true} {
				if !sameAsLibrary(t, data, shared) {
					t.Errorf("%s: declined %x", canonical(f), data)
				}
			}
		}
	}
	for _, m := range codecMessages() {
		data := libEncode(t, m)
		got := newLike(m)
		if err := Msgpack.Unmarshal(data, got); err != nil {
			t.Fatalf("%#v: %v", m, err)
		}
		lib := newLike(m)
		if err := libDecode(data, lib); err != nil {
			t.Fatal(err)
		}
		if a, b := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", lib); a != b {
			t.Errorf("ours:    %s\nlibrary: %s", a, b)
		}
	}
}

func newLike(m Message) Message {
	switch m.(type) {
	case *Request:
		return new(Request)
	case *ListRequest:
		return new(ListRequest)
	case *ListReply:
		return new(ListReply)
	case *Announcement:
		return new(Announcement)
	case *SkillRequest:
		return new(SkillRequest)
	case *SkillReply:
		return new(SkillReply)
	case *HeadersRequest:
		return new(HeadersRequest)
	case *HeadersReply:
		return new(HeadersReply)
	case *MCPRequest:
		return new(MCPRequest)
	case *MCPReply:
		return new(MCPReply)
	case *MCPUpdate:
		return new(MCPUpdate)
	}
	return new(Frame)
}

// TestDecoderReadsOtherWriters: shapes the generated encoder never writes
// but other msgpack writers do are read as the library reads them.
func TestDecoderReadsOtherWriters(t *testing.T) {
	heartbeat := func(seq ...byte) []byte {
		b := appendMapLen(nil, 3)
		b = appendStr(appendStr(b, "kind"), "heartbeat")
		b = appendStr(appendStr(b, "id"), "c")
		return append(appendStr(b, "seq"), seq...)
	}
	withTime, err := Msgpack.Marshal(&Frame{Kind: KindChunk, ID: "c", Seq: 1,
		Chunk: &toolkit.Chunk{Metadata: map[string]any{"t": time.Unix(5, 7)}}})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{
		"timestamp value":   withTime,
		"seq as int8":       heartbeat(0xd0, 0x05),
		"seq as int64":      heartbeat(0xd3, 0, 0, 0, 0, 0, 0, 0, 9),
		"nil seq":           heartbeat(0xc0),
		"deep":              deepFrame(MaxDepth - 4),
		"id as bin":         append(append(appendStr(appendStr(appendMapLen(nil, 3), "kind"), "heartbeat"), 0xa3, 's', 'e', 'q', 0x01, 0xa2, 'i', 'd', 0xc4, 1), 'c'),
		"unknown key":       mustMarshal(t, map[string]any{"kind": "heartbeat", "id": "c", "seq": 1, "later": []any{1, "x"}}),
		"progress from int": mustMarshal(t, map[string]any{"kind": "progress", "id": "c", "seq": 1, "progress": map[string]any{"progress": 3}}),
	}
	for name, data := range bodies {
		if !sameAsLibrary(t, data, true) {
			var f Frame
			t.Errorf("%s: declined: %v", name, Msgpack.Unmarshal(data, &f))
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deepFrame is a chunk frame whose metadata nests n arrays.
func deepFrame(n int) []byte {
	var v any = "x"
	for range n {
		v = []any{v}
	}
	data, _ := Msgpack.Marshal(&Frame{Kind: KindChunk, ID: "c", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{"d": v}}})
	return data
}

// TestDecoderBadInput: truncated, oversized, too deep and garbage bodies
// fail with an error, never a panic, never an allocation for a length the
// body cannot hold.
func TestDecoderBadInput(t *testing.T) {
	good, err := Msgpack.Marshal(codecFrames()[1])
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
		"int key":        {0x81, 0x01, 0xc0},
		"too deep":       deepFrame(MaxDepth + 1),
		"unknown ext":    append(appendStr(appendMapLen(nil, 1), "x"), 0xd4, 0x05, 0x00),
	}
	for i := 1; i < len(good); i += 7 {
		bodies[fmt.Sprintf("truncated at %d", i)] = good[:i]
	}
	for name, data := range bodies {
		var f Frame
		if err := Msgpack.Unmarshal(data, &f); err == nil {
			t.Errorf("%s: accepted as %s", name, canonical(&f))
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		var f Frame
		Msgpack.Unmarshal([]byte{0x84, 0xa4, 'k', 'i', 'n', 'd', 0xa5, 'c', 'h', 'u', 'n', 'k', 0xa5, 'c', 'h', 'u', 'n', 'k',
			0x81, 0xa7, 'c', 'o', 'n', 't', 'e', 'n', 't', 0xdd, 0x7f, 0xff, 0xff, 0xff}, &f)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("100 refused claims of 2^31 blocks allocated %d bytes", n)
	}
}

// FuzzDecoderMatchesLibrary: whatever the decoder accepts, the library
// accepts with the same result, read as a request, a frame or one of the
// other messages (codecMessages: the MCP requests a worker passes on and
// their cancels among them).
func FuzzDecoderMatchesLibrary(f *testing.F) {
	for _, fr := range codecFrames() {
		data, err := Msgpack.Marshal(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, m := range codecMessages() {
		data, err := Msgpack.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsLibrary(t, data, false)
		seen := map[string]bool{}
		for _, m := range codecMessages() {
			got := newLike(m)
			if _, isFrame := got.(*Frame); isFrame || seen[fmt.Sprintf("%T", got)] {
				continue // sameAsLibrary's, or a type read already
			}
			seen[fmt.Sprintf("%T", got)] = true
			if err := Msgpack.Unmarshal(data, got); err != nil {
				continue
			}
			lib := newLike(m)
			if err := libDecode(data, lib); err != nil {
				t.Fatalf("the decoder accepts %x as %T, the library says %v", data, got, err)
			}
			if a, b := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", lib); a != b {
				t.Fatalf("body %x\nours:    %s\nlibrary: %s", data, a, b)
			}
		}
	})
}

// benchItem is a tool's typed value, which the msgpack library writes.
type benchItem struct {
	Name string
	Tags []string
	Next *benchItem
	Meta any
}

func BenchmarkCodec(b *testing.B) {
	final := &Frame{Kind: KindFinal, ID: "call-1", Seq: 1, Final: &toolkit.Response{ID: "call-1", State: toolkit.StateSuccess,
		Content: []toolkit.Block{{Type: toolkit.BlockText, Text: strings.Repeat("x", 128)}}}}
	req := &Request{ID: "call-1", Input: map[string]any{"text": strings.Repeat("x", 128)}}
	extra := &MetaEntry{Key: MetaWorker, Value: "w1"}
	fdata, _ := AppendFrame(nil, final, extra)
	rdata, _ := Msgpack.Marshal(req)
	b.Run("encode-final", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendFrame(buf[:0], final, extra)
		}
	})
	b.Run("decode-final", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f Frame
			if err := Msgpack.UnmarshalShared(fdata, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-final-library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f Frame
			if err := libDecode(fdata, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-request", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = Msgpack.Append(buf[:0], req)
		}
	})
	typed := &Request{ID: "call-1", Input: map[string]any{"item": &benchItem{Name: "a", Tags: []string{"x", "y"},
		Next: &benchItem{Name: "b", Meta: map[string]any{"k": 1}}}}}
	b.Run("encode-request-typed", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = Msgpack.Append(buf[:0], typed)
		}
	})
	b.Run("decode-request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Request
			if err := Msgpack.UnmarshalShared(rdata, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAppendJSONNumber: a json.Number (a Go caller's UseNumber) is
// written as the number it spells, where the library writes a string:
// an integer as the msgpack integer of its int64 (a uint64 past int64),
// any other number as a float64, in arrays and maps too; one that is no
// number is an error.
func TestAppendJSONNumber(t *testing.T) {
	for _, tt := range []struct {
		n    json.Number
		want any
	}{
		{"0", int64(0)}, {"-0", int64(0)}, {"3", int64(3)}, {"-33", int64(-33)}, {"255", int64(255)},
		{"9007199254740993", int64(9007199254740993)}, {"-9223372036854775808", int64(math.MinInt64)},
		{"18446744073709551615", uint64(math.MaxUint64)}, {"18446744073709551616", 18446744073709551616.0},
		{"3.0", 3.0}, {"2.5", 2.5}, {"1e2", 100.0}, {"-1E-7", -1e-7},
	} {
		got, err := appendValue(nil, tt.n)
		if err != nil {
			t.Fatalf("%s: %v", tt.n, err)
		}
		if want := libEncode(t, tt.want); !bytes.Equal(got, want) {
			t.Errorf("%s: wrote %x, want %x (%T %v)", tt.n, got, want, tt.want, tt.want)
		}
	}
	got, err := appendValue(nil, map[string]any{"l": []any{json.Number("7")}})
	if want := libEncode(t, map[string]any{"l": []any{int64(7)}}); err != nil || !bytes.Equal(got, want) {
		t.Errorf("nested: wrote %x (%v), want %x", got, err, want)
	}
	for _, n := range []json.Number{"", "abc", "0x10", "1.", "+1", "01", " 1", "NaN", "1e400"} {
		if _, err := appendValue(nil, n); err == nil || !strings.Contains(err.Error(), "json.Number") {
			t.Errorf("%q: %v, want an error naming the json.Number", n, err)
		}
	}
}

// TestAppendJSONNumberInTypedContainers: a json.Number in a typed slice
// or map a Go caller builds ([]json.Number, map[string]json.Number, a
// []map[string]any holding one) is written as the number it spells, as
// in []any and map[string]any, not as the msgpack library's string;
// typed slices and maps that hold none are written as the library
// writes them, and one that is not a number, or a typed container
// holding itself, is an error, not a crash.
func TestAppendJSONNumberInTypedContainers(t *testing.T) {
	for _, tt := range []struct {
		v, want any
	}{
		{[]json.Number{"1", "2.5"}, []any{int64(1), 2.5}},
		{[2]json.Number{"1", "18446744073709551615"}, []any{int64(1), uint64(math.MaxUint64)}},
		{map[string]json.Number{"k": "9007199254740993"}, map[string]any{"k": int64(9007199254740993)}},
		{[]map[string]any{{"k": json.Number("4")}}, []any{map[string]any{"k": int64(4)}}},
		{map[string][]json.Number{"k": {"-3"}}, map[string]any{"k": []any{int64(-3)}}},
		{[]json.Number(nil), nil},
		{[]string{"a"}, []string{"a"}},
		{[]int{1, 300}, []int{1, 300}},
		{map[string]int{"k": 1}, map[string]int{"k": 1}},
		{[]map[string]any{{"k": 1}}, []map[string]any{{"k": 1}}},
	} {
		got, err := appendValue(nil, tt.v)
		if want := libEncode(t, tt.want); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%#v: wrote %x (%v), want %x (%#v)", tt.v, got, err, want, tt.want)
		}
	}
	self := []map[string]any{{}}
	self[0]["self"] = self
	for _, v := range []any{[]json.Number{"1", "abc"}, map[string]json.Number{"k": "1e400"}, self} {
		if _, err := appendValue(nil, map[string]any{"v": v}); err == nil {
			t.Errorf("%T: no error", v)
		}
	}
}

// TestAppendValueHoldingItself: an input or metadata whose map or slice
// holds itself (in process; no decoder gives one) is an error, not a
// recursion until the stack overflows, which no recover catches; one
// nested deep but finite is written.
func TestAppendValueHoldingItself(t *testing.T) {
	m := map[string]any{}
	m["self"] = []any{m}
	l := []any{nil}
	l[0] = l
	for _, v := range []any{m, l} {
		if _, err := appendValue(nil, v); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
			t.Errorf("%T holding itself: %v, want an error saying it is nested too deep", v, err)
		}
	}
	if _, err := Msgpack.Append(nil, &Request{ID: "c1", Input: m}); err == nil {
		t.Error("a request whose input holds itself: no error")
	}
	var deep any = "leaf"
	for range 1000 {
		deep = []any{deep}
	}
	if _, err := appendValue(nil, deep); err != nil {
		t.Errorf("1000 levels: %v", err)
	}
}

// TestTypedContainerHoldingItselfSaysValue: a typed slice or map that
// holds itself (and may hold a json.Number, so the encoder walks it) in
// a tool's metadata, log data or ask params, or a call's input, is
// refused with the writer's error, "msgpack: the value is nested deeper
// than 10000", as subjects.md says and as a map holding itself is, where
// it said "the input is nested deeper than 10000" of a tool's output too.
func TestTypedContainerHoldingItselfSaysValue(t *testing.T) {
	type list []any
	l := list{nil}
	l[0] = l
	lm := []map[string]any{{}}
	lm[0]["self"] = lm
	for _, v := range []any{l, lm} {
		for what, msg := range map[string]Message{
			"call's input":     &Request{ID: "c1", Input: map[string]any{"v": v}},
			"final's metadata": &Frame{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{Metadata: map[string]any{"v": v}}},
			"log's data":       &Frame{Kind: KindLog, ID: "c1", Seq: 1, Log: &toolkit.LogMessage{Level: "info", Data: v}},
			"ask's params":     &Frame{Kind: KindAsk, ID: "c1", Seq: 1, Ask: &Ask{Method: "elicitation/create", Params: v, Reply: "r"}},
		} {
			if _, err := Msgpack.Append(nil, msg); !errors.Is(err, errEncodeTooDeep) || err.Error() != "msgpack: the value is nested deeper than 10000" {
				t.Errorf("%T holding itself in a %s: %v, want %q", v, what, err, errEncodeTooDeep)
			}
		}
	}
}
