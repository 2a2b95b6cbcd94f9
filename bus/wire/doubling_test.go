package wire

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// dagNode is a struct the encoders write whose two fields may point to
// the same next node: a value that doubles at each level when written.
type dagNode struct {
	A, B *dagNode
}

// doubling returns a value of depth levels whose encoding doubles at
// each: a dagNode, a []any and a map[string]any holding the same next
// level twice.
func doubling(depth int) map[string]any {
	var n *dagNode
	var list []any
	var m map[string]any
	for range depth {
		n = &dagNode{A: n, B: n}
		list = []any{list, list}
		m = map[string]any{"a": m, "b": m}
	}
	return map[string]any{"a struct of pointers": n, "a list": list, "a map": m}
}

// TestValueDoublingAtEachLevel: a value a tool made that is a few
// hundred bytes in memory but doubles at each of its forty levels when
// written (two fields, list entries or map values holding the same next
// level), in a final's or a chunk's metadata, a log's data, an ask's
// params or a call's input, in msgpack or JSON, is an error saying it
// would encode to too much, found before the worker holds more than a
// few times the bound in all (a buffer growing to it), not a terabyte written whole until the process
// is killed; a list holding the same long list a hundred thousand times
// likewise. The same shapes a few levels deep are written as the
// library and encoding/json write them. In a child process, as the
// worker's fate would be a killed process.
func TestValueDoublingAtEachLevel(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_DOUBLING_CHILD") {
		return
	}
	wide := make([][]string, 100_000)
	inner := make([]string, 1000)
	for i := range inner {
		inner[i] = strings.Repeat("x", 100)
	}
	for i := range wide {
		wide[i] = inner
	}
	values := doubling(40)
	values["a list of the same long list"] = wide
	for name, v := range values {
		for what, msg := range map[string]Message{
			"input":            &Request{ID: "c1", Input: map[string]any{"v": v}},
			"final's metadata": &Frame{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{Metadata: map[string]any{"v": v}}},
			"chunk's metadata": &Frame{Kind: KindChunk, ID: "c1", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{"v": v}}},
			"log's data":       &Frame{Kind: KindLog, ID: "c1", Seq: 1, Log: &toolkit.LogMessage{Level: "info", Data: v}},
			"ask's params":     &Frame{Kind: KindAsk, ID: "c1", Seq: 1, Ask: &Ask{Method: "elicitation/create", Params: v, Reply: "r"}},
		} {
			if name != "a struct of pointers" && what != "final's metadata" {
				continue // the same encoder as the final's, writing 64 MiB each time
			}
			for _, c := range []Codec{Msgpack, JSON} {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := c.Append(nil, msg)
				runtime.ReadMemStats(&after)
				if err == nil || !strings.Contains(err.Error(), "would encode to more than 64 MiB") {
					t.Errorf("%s in a %s, %s: %v, want an error saying it would encode to more than 64 MiB", name, what, c, err)
				}
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*maxEncodedBytes {
					t.Errorf("%s in a %s, %s: refusing it allocated %d MiB, want at most %d", name, what, c, grew>>20, 8*maxEncodedBytes>>20)
				}
			}
		}
	}
	for name, v := range doubling(8) {
		in := map[string]any{"v": v}
		want, err := msgpack.Marshal(in)
		if err != nil {
			t.Fatalf("%s: the library: %v", name, err)
		}
		got, err := Msgpack.Append(nil, &Request{ID: "c1", Input: in})
		if err != nil {
			t.Errorf("%s eight levels deep, msgpack: %v", name, err)
		} else if name == "a struct of pointers" && !bytes.Contains(got, want[1:]) {
			t.Errorf("%s eight levels deep, msgpack: encoded % x, want the library's % x within", name, got, want[1:])
		}
		wantJSON, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", name, err)
		}
		got, err = JSON.Append(nil, &Request{ID: "c1", Input: in})
		if err != nil {
			t.Errorf("%s eight levels deep, JSON: %v", name, err)
		} else if !bytes.Contains(got, wantJSON) {
			t.Errorf("%s eight levels deep, JSON: encoded %s, want encoding/json's %s within", name, got, wantJSON)
		}
	}
}

// TestJSONValueDeepChain: a chain of structs a million deep in a tool's
// metadata or a call's input, written as JSON, is an error saying it is
// nested too deep, not a recursion of encoding/json until the stack
// overflows, which kills the process; a chain within the bound is
// written. In a child process, as a stack overflow is no panic a test
// survives.
func TestJSONValueDeepChain(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_JSON_CHAIN_CHILD") {
		return
	}
	chain := &cycleNode{Name: "leaf"}
	for range 1_000_000 {
		chain = &cycleNode{Name: "n", Next: chain}
	}
	var list any = "leaf"
	for range 1_000_000 {
		list = []any{list}
	}
	for name, v := range map[string]any{"a chain of structs": chain, "a chain of lists": list} {
		for what, msg := range map[string]Message{
			"input":            &Request{ID: "c1", Input: map[string]any{"v": v}},
			"final's metadata": &Frame{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{Metadata: map[string]any{"v": v}}},
			"answer's result":  &Answer{Result: v},
		} {
			if _, err := JSON.Append(nil, msg); err == nil || !strings.Contains(err.Error(), "json: the value is nested deeper than") {
				t.Errorf("%s in a %s: %v, want an error saying it is nested too deep", name, what, err)
			}
		}
	}
	within := &cycleNode{Name: "leaf"}
	for range 1000 {
		within = &cycleNode{Name: "n", Next: within}
	}
	if _, err := JSON.Append(nil, &Request{ID: "c1", Input: map[string]any{"v": within}}); err != nil {
		t.Errorf("a struct chain 1000 deep: %v", err)
	}
}
