package wire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/toolkit"
)

// TestUnreadableRefused: a frame or an answer whose values its reader's
// decoder would refuse (nested too deep, or decoding to more than the
// body's Budget: a few thousand empty objects) is an error when written,
// in either codec, and through AppendFrame; one just within the limits
// is written and read back.
func TestUnreadableRefused(t *testing.T) {
	empties := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{}
		}
		return out
	}
	deep := func(n int) any {
		var v any = "x"
		for range n {
			v = []any{v}
		}
		return v
	}
	final := func(v any) *Frame {
		return &Frame{Kind: KindFinal, ID: "c", Seq: 1, Final: &toolkit.Response{State: toolkit.StateSuccess, Metadata: map[string]any{"v": v}}}
	}
	for _, tc := range []struct {
		name string
		m    Message
		ok   bool
	}{
		{"empty objects within the budget", final(empties(1000)), true},
		{"empty objects over it", final(empties(5000)), false},
		{"nested within the depth", final(deep(MaxDepth - 4)), true},
		{"nested deeper", final(deep(MaxDepth)), false},
		{"a chunk's metadata", &Frame{Kind: KindChunk, ID: "c", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{"v": deep(MaxDepth)}}}, false},
		{"a log's data", &Frame{Kind: KindLog, ID: "c", Seq: 1, Log: &toolkit.LogMessage{Level: "info", Data: deep(MaxDepth)}}, false},
		{"an ask's params", &Frame{Kind: KindAsk, ID: "c", Seq: 1, Ask: &Ask{Method: "elicitation/create", Params: deep(MaxDepth), Reply: "r"}}, false},
		{"an answer's result", &Answer{Result: empties(5000)}, false},
	} {
		for _, c := range []Codec{Msgpack, JSON} {
			data, err := c.Marshal(tc.m)
			switch {
			case tc.ok && err != nil:
				t.Errorf("%s, %s: %v", tc.name, c, err)
			case tc.ok:
				back := reflect.New(reflect.TypeOf(tc.m).Elem()).Interface().(Message)
				if err := c.Unmarshal(data, back); err != nil {
					t.Errorf("%s, %s: written, then not read: %v", tc.name, c, err)
				}
			case err == nil || !strings.Contains(err.Error(), "its reader would refuse it"):
				t.Errorf("%s, %s: err = %v", tc.name, c, err)
			}
		}
		if f, ok := tc.m.(*Frame); ok {
			if _, err := AppendFrame(nil, f, &MetaEntry{Key: MetaWorker, Value: "w1"}); (err == nil) != tc.ok {
				t.Errorf("%s, AppendFrame: err = %v", tc.name, err)
			}
		}
	}
}

// selfPanicker's encoders panic with a map that holds itself.
type selfPanicker struct{}

func (selfPanicker) panicSelf() {
	m := map[string]any{}
	m["self"] = m
	panic(m)
}

func (p selfPanicker) MarshalJSON() ([]byte, error)         { p.panicSelf(); return nil, nil }
func (p selfPanicker) EncodeMsgpack(*msgpack.Encoder) error { p.panicSelf(); return nil }

// A value whose own encoder panics is an encoding error in both codecs,
// not a panic for the writer (a worker) to die of.
func TestEncoderPanicIsAnError(t *testing.T) {
	f := &Frame{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{State: toolkit.StateSuccess,
		Metadata: map[string]any{"v": selfPanicker{}}}}
	for _, c := range []Codec{Msgpack, JSON} {
		if _, err := c.Marshal(f); err == nil || !strings.Contains(err.Error(), "panicked: a value of type map[string]interface {}") {
			t.Errorf("%v: %v", c, err)
		}
	}
	if _, err := AppendFrame(nil, f, nil); err == nil {
		t.Error("AppendFrame: no error")
	}
}
