package wire

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// Bodies built to hurt: deep nesting costs a decoding goroutine its stack,
// wide bodies of empty containers inflate many times on the heap. Both
// encodings refuse them before they allocate, and a legitimate body of
// the same size still decodes.

func deepJSON(levels int) []byte {
	return []byte(`{"id":"x","input":{"text":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}}`)
}

func deepMsgpack(levels int) []byte {
	b := appendMapLen(nil, 2)
	b = appendStr(appendStr(b, "id"), "x")
	b = appendMapLen(appendStr(b, "input"), 1)
	b = appendStr(b, "text")
	for range levels {
		b = append(b, 0x91)
	}
	return append(b, 0xc0)
}

// wideMsgpack is a request whose input holds n empty maps: about a byte
// each.
func wideMsgpack(n int) []byte {
	b := appendMapLen(nil, 2)
	b = appendStr(appendStr(b, "id"), "x")
	b = appendMapLen(appendStr(b, "input"), 1)
	b = appendArrayLen(appendStr(b, "a"), n)
	return append(b, bytes.Repeat([]byte{0x80}, n)...)
}

func wideJSON(n int) []byte {
	return []byte(`{"id":"x","input":{"a":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}}`)
}

func TestHostileBodiesRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		c    Codec
		body []byte
		want string
	}{
		"deep JSON":    {JSON, deepJSON(9000), "nested deeper than 64"},
		"deep msgpack": {Msgpack, deepMsgpack(9000), "nested deeper than 64"},
		"wide JSON":    {JSON, wideJSON(300_000), "would decode to more than"},
		"wide msgpack": {Msgpack, wideMsgpack(900_000), "would decode to more than"},
	} {
		var r Request
		err := tc.c.Unmarshal(tc.body, &r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// TestHostileBodiesCostLittle: refusing a thousand hostile bodies
// allocates little (the refusal comes before the decoding), and uses no
// deep stack.
func TestHostileBodiesCostLittle(t *testing.T) {
	bodies := []struct {
		c    Codec
		body []byte
	}{{JSON, deepJSON(9000)}, {Msgpack, deepMsgpack(9000)}, {JSON, wideJSON(300_000)}, {Msgpack, wideMsgpack(900_000)}}
	for _, b := range bodies {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			var r Request
			if b.c.Unmarshal(b.body, &r) == nil {
				t.Fatal("accepted")
			}
		}
		runtime.ReadMemStats(&after)
		perBody := (after.TotalAlloc - before.TotalAlloc) / 100
		if limit := uint64(len(b.body)) + 4096; perBody > limit {
			t.Errorf("%s body of %d bytes: refusing it allocated %d bytes each, more than the body", b.c, len(b.body), perBody)
		}
	}
}

// TestLegitimateBodiesDecode: bodies as large as the hostile ones, but of
// ordinary data, are within their budget.
func TestLegitimateBodiesDecode(t *testing.T) {
	text := strings.Repeat("ünïcödé text ✓ ", 60_000)
	nums := make([]any, 200_000)
	for i := range nums {
		nums[i] = float64(i % 10)
	}
	objs := make([]any, 20_000)
	for i := range objs {
		objs[i] = map[string]any{"name": "item", "n": float64(i)}
	}
	for name, input := range map[string]map[string]any{
		"long text":        {"text": text},
		"small numbers":    {"nums": nums},
		"small objects":    {"objs": objs},
		"nested, not deep": {"a": map[string]any{"b": map[string]any{"c": []any{[]any{[]any{"d"}}}}}},
	} {
		req := &Request{ID: "x", Input: input}
		for _, c := range []Codec{Msgpack, JSON} {
			data, err := c.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			var got Request
			if err := c.Unmarshal(data, &got); err != nil {
				t.Errorf("%s in %s (%d bytes): %v", name, c, len(data), err)
			}
		}
	}
	// JSON strings with escapes and brackets inside do not nest.
	tricky := []byte(`{"id":"x","input":{"s":"[[[{{\"]]]\\\\","t":"` + strings.Repeat("[", 200) + `"}}`)
	var r Request
	if err := JSON.Unmarshal(tricky, &r); err != nil || !json.Valid(tricky) {
		t.Errorf("brackets inside strings: %v", err)
	}
}

// frameRepeating is a final frame whose map names key n times, each
// with an empty map: the library and the decoder take the last one.
func frameRepeating(key string, n int) []byte {
	b := appendMapLen(nil, n+3)
	b = appendStr(appendStr(b, "kind"), "final")
	b = appendStr(appendStr(b, "id"), "x")
	b = appendUint(appendStr(b, "seq"), 1)
	for range n {
		b = append(appendStr(b, key), 0x80)
	}
	return b
}

// requestHolding is a request whose input's "a" is an array of n copies
// of elem.
func requestHolding(elem []byte, n int) []byte {
	b := appendMapLen(nil, 2)
	b = appendStr(appendStr(b, "id"), "x")
	b = appendMapLen(appendStr(b, "input"), 1)
	b = appendArrayLen(appendStr(b, "a"), n)
	return append(b, bytes.Repeat(elem, n)...)
}

// TestHostileBodiesStayWithinBudget: what decoding a body allocates,
// accepted or refused, stays within its Budget (and a little for the
// message and an error). Allocations the decoder
// did not charge let a body through that decoded to more: a frame naming
// its final again and again (each a new response, 27 times the body), a
// list of negative small integers (each boxed, 24 times).
func TestHostileBodiesStayWithinBudget(t *testing.T) {
	for name, tc := range map[string]struct {
		msg  func() Message
		body []byte
	}{
		"final named 2,000 times":   {func() Message { return new(Frame) }, frameRepeating("final", 2_000)},
		"final named 100,000 times": {func() Message { return new(Frame) }, frameRepeating("final", 100_000)},
		"chunk named 100,000 times": {func() Message { return new(Frame) }, frameRepeating("chunk", 100_000)},
		"log named 100,000 times":   {func() Message { return new(Frame) }, frameRepeating("log", 100_000)},
		"2,000 negative fixints":    {func() Message { return new(Request) }, requestHolding([]byte{0xff}, 2_000)},
		"100,000 negative fixints":  {func() Message { return new(Request) }, requestHolding([]byte{0xff}, 100_000)},
		"100,000 timestamps":        {func() Message { return new(Request) }, requestHolding([]byte{0xd6, 0xff, 0, 0, 0, 1}, 100_000)},
		"100,000 negative int8s":    {func() Message { return new(Request) }, requestHolding([]byte{0xd0, 0x80}, 100_000)},
		"100,000 input fields":      {func() Message { return new(Request) }, frameRepeating("input", 100_000)},
	} {
		for _, shared := range []bool{false, true} {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			const runs = 10
			for range runs {
				m := tc.msg()
				if shared {
					Msgpack.UnmarshalShared(tc.body, m)
				} else {
					Msgpack.Unmarshal(tc.body, m)
				}
			}
			runtime.ReadMemStats(&after)
			// The budget, and a little for the message and an error.
			if got := (after.TotalAlloc - before.TotalAlloc) / runs; got > uint64(Budget(len(tc.body)))+4096 {
				t.Errorf("%s (shared %v): the body of %d bytes allocated %d bytes decoding, over its budget of %d", name, shared, len(tc.body), got, Budget(len(tc.body)))
			}
		}
	}
}
