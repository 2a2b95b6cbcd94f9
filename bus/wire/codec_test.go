package wire_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// decodeFrame decodes and checks a frame as a client does.
func decodeFrame(data []byte, c wire.Codec) (*wire.Frame, error) {
	f := new(wire.Frame)
	if err := c.Unmarshal(data, f); err != nil {
		return nil, err
	}
	return f, f.Check()
}

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoder: it must never
// panic, and a frame it accepts must survive an encode/decode round trip
// unchanged. The seed corpus is in testdata/fuzz/FuzzDecodeFrame.
func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range seedFrames() {
		for _, json := range []bool{false, true} {
			data, err := codec(json).Marshal(fr)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, json)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		fr, err := decodeFrame(data, codec(json))
		if err != nil {
			return
		}
		again, err := codec(json).Marshal(fr)
		if err != nil {
			t.Fatalf("an accepted frame does not encode: %v", err)
		}
		fr2, err := decodeFrame(again, codec(json))
		if err != nil {
			t.Fatalf("a re-encoded frame does not decode: %v", err)
		}
		if a, b := canonical(fr), canonical(fr2); a != b {
			t.Fatalf("round trip changed the frame:\n%s\n%s", a, b)
		}
	})
}

func codec(json bool) wire.Codec {
	if json {
		return wire.JSON
	}
	return wire.Msgpack
}

// canonical prints a frame with its payload (fmt sorts map keys).
func canonical(f *wire.Frame) string {
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

func seedFrames() []*wire.Frame {
	return []*wire.Frame{
		{Kind: wire.KindChunk, ID: "c1", Seq: 1, Chunk: &toolkit.Chunk{State: toolkit.StateRunning, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "hi"}}}},
		{Kind: wire.KindChunk, ID: "c1", Seq: 2, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "d", MediaType: "image/png", Data: "aGVsbG8="}}, Metadata: map[string]any{"n": int64(1), "f": 1.5, "l": []any{"a", true, nil}}}},
		{Kind: wire.KindProgress, ID: "c1", Seq: 3, Progress: &toolkit.Progress{Progress: 1, Total: 4, Message: "step"}},
		{Kind: wire.KindChunk, ID: "c1", Seq: 4, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "a"}}},
			More: []toolkit.Chunk{{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "b"}}}, {State: toolkit.StateRunning, Metadata: map[string]any{"k": "v"}}}},
		{Kind: wire.KindHeartbeat, ID: "c1", Seq: 4},
		{Kind: wire.KindLog, ID: "c1", Seq: 4, Log: &toolkit.LogMessage{Level: "warning", Logger: "t", Data: []any{"a", int64(1)}}},
		{Kind: wire.KindFinal, ID: "c1", Seq: 5, Chunks: 2, Final: &toolkit.Response{ID: "c1", State: toolkit.StateSuccess, Metadata: map[string]any{"worker": "w1"}}},
		{Kind: wire.KindFinal, ID: "c2", Seq: 1, Final: &toolkit.Response{ID: "c2", State: toolkit.StateError, Code: toolkit.CodeNotFound, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "ToolNotFoundError"}}}},
	}
}

func TestFrameCheck(t *testing.T) {
	final := &toolkit.Response{ID: "x", State: toolkit.StateSuccess}
	cases := []struct {
		name string
		f    *wire.Frame
	}{
		{"zero seq", &wire.Frame{Kind: wire.KindHeartbeat, ID: "x"}},
		{"unknown kind", &wire.Frame{Kind: "bogus", ID: "x", Seq: 1}},
		{"final without response", &wire.Frame{Kind: wire.KindFinal, ID: "x", Seq: 1}},
		{"chunk with a final", &wire.Frame{Kind: wire.KindChunk, ID: "x", Seq: 1, Chunk: &toolkit.Chunk{}, Final: final}},
		{"more chunks without a chunk", &wire.Frame{Kind: wire.KindChunk, ID: "x", Seq: 1, More: []toolkit.Chunk{{}}}},
		{"final with more chunks", &wire.Frame{Kind: wire.KindFinal, ID: "x", Seq: 1, Final: final, More: []toolkit.Chunk{{}}}},
		{"heartbeat with payload", &wire.Frame{Kind: wire.KindHeartbeat, ID: "x", Seq: 1, Progress: &toolkit.Progress{}}},
		{"unknown code", &wire.Frame{Kind: wire.KindFinal, ID: "x", Seq: 1, Final: &toolkit.Response{Code: "teapot"}}},
		{"unknown final state", &wire.Frame{Kind: wire.KindFinal, ID: "x", Seq: 1, Final: &toolkit.Response{State: "teapot"}}},
		{"unknown chunk state", &wire.Frame{Kind: wire.KindChunk, ID: "x", Seq: 1, Chunk: &toolkit.Chunk{State: "teapot"}}},
		{"unknown state of more chunks", &wire.Frame{Kind: wire.KindChunk, ID: "x", Seq: 1, Chunk: &toolkit.Chunk{}, More: []toolkit.Chunk{{State: "teapot"}}}},
	}
	for _, tc := range cases {
		for _, json := range []bool{false, true} {
			data, err := codec(json).Marshal(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeFrame(data, codec(json)); err == nil {
				t.Errorf("%s (json %v): accepted", tc.name, json)
			}
		}
	}
	for _, f := range seedFrames() {
		if err := f.Check(); err != nil {
			t.Errorf("%s: %v", canonical(f), err)
		}
	}
}

func TestCodecOf(t *testing.T) {
	for _, tc := range []struct {
		h    nats.Header
		want wire.Codec
	}{
		{nil, wire.Msgpack},
		{nats.Header{}, wire.Msgpack},
		{nats.Header{wire.HeaderContentType: {wire.ContentTypeMsgpack}}, wire.Msgpack},
		{nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}, wire.JSON},
		{nats.Header{wire.HeaderContentType: {"application/json; charset=utf-8"}}, wire.JSON},
		{nats.Header{wire.HeaderContentType: {"text/plain"}}, wire.Msgpack},
	} {
		if got := wire.CodecOf(tc.h); got != tc.want {
			t.Errorf("CodecOf(%v) = %s, want %s", tc.h, got, tc.want)
		}
	}
}

func TestSessionKeys(t *testing.T) {
	for session, key := range map[string]string{
		"agent-1":          "agent-1",
		"":                 "=",
		"a.b":              "=YS5i",
		"user@example.com": "=dXNlckBleGFtcGxlLmNvbQ",
		"会话":               "=5Lya6K-d",
	} {
		got, err := wire.SessionKey(session)
		if err != nil || got != key {
			t.Errorf("SessionKey(%q) = %q, %v; want %q", session, got, err, key)
		}
		back, err := wire.ParseSessionKey(key)
		if err != nil || back != session {
			t.Errorf("ParseSessionKey(%q) = %q, %v; want %q", key, back, err, session)
		}
	}
	// An identity's sessions are keyed under the identity's token.
	for scope, key := range map[string]string{
		toolkit.SessionScope("alice", "s1"):  "alice.s1",
		toolkit.SessionScope("alice", "a.b"): "alice.=YS5i",
		toolkit.SessionScope("bob", ""):      "bob.=",
	} {
		got, err := wire.SessionKey(scope)
		if err != nil || got != key {
			t.Errorf("SessionKey(%q) = %q, %v; want %q", scope, got, err, key)
		}
		back, err := wire.ParseSessionKey(key)
		if err != nil || back != scope {
			t.Errorf("ParseSessionKey(%q) = %q, %v; want %q", key, back, err, scope)
		}
	}
	if _, err := wire.SessionKey(string(make([]byte, 800))); err == nil {
		t.Error("a session over the key limit was accepted")
	}
	for _, bad := range []string{"a.b.c", "a.=!!", "=!!", "a b", "a b.c"} {
		if _, err := wire.ParseSessionKey(bad); err == nil {
			t.Errorf("ParseSessionKey(%q) accepted", bad)
		}
	}
}

// TestJSONRequestKeepsBigIntegers: a call sent as JSON (a caller in
// another language) has an integer beyond ±2^53 in its input decoded
// exact, as ParseRawInput, the MCP gateway and toolctl do.
func TestJSONRequestKeepsBigIntegers(t *testing.T) {
	var req wire.Request
	if err := wire.JSON.Unmarshal([]byte(`{"id":"c1","input":{"n":9007199254740993,"l":[1.5,-9007199254740995],"s":"12345678901234567"}}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.Input["n"] != int64(9007199254740993) || fmt.Sprint(req.Input["l"]) != "[1.5 -9007199254740995]" || req.Input["s"] != "12345678901234567" {
		t.Errorf("input = %#v", req.Input)
	}
}
