package wire

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// cycleNode is a struct the msgpack library writes, which may hold
// itself through a pointer.
type cycleNode struct {
	Name string
	Next *cycleNode
}

// customNode writes itself (msgpack.CustomEncoder): an array of its name
// and the next node.
type customNode struct {
	name string
	next *customNode
}

func (c *customNode) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := enc.EncodeString(c.name); err != nil {
		return err
	}
	return enc.Encode(c.next)
}

// TestLibraryValueHoldingItself: a value the msgpack library writes (a
// struct holding itself through a pointer, a chain of them a million
// deep, a CustomEncoder holding itself) in a call's Input or a tool's
// metadata or chunk values is an error saying it is nested too deep, not
// a recursion until the stack overflows, which kills the process; a
// struct nested deep but within the limit is written. The encodings run
// in a child process, as a stack overflow is no panic a test survives.
func TestLibraryValueHoldingItself(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	self := &cycleNode{Name: "a"}
	self.Next = self
	chain := &cycleNode{Name: "leaf"}
	for range 1_000_000 {
		chain = &cycleNode{Name: "n", Next: chain}
	}
	custom := &customNode{name: "c"}
	custom.next = custom
	within := &cycleNode{Name: "leaf"}
	for range maxEncodeDepth {
		within = &cycleNode{Name: "n", Next: within}
	}
	for name, v := range map[string]any{
		"a struct holding itself":        self,
		"a chain a million deep":         chain,
		"a CustomEncoder holding itself": custom,
		"in a map":                       map[string]any{"n": []any{self}},
		"a typed slice of them":          []*cycleNode{self},
	} {
		for what, msg := range map[string]Message{
			"input":            &Request{ID: "c1", Input: map[string]any{"v": v}},
			"final's metadata": &Frame{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{Metadata: map[string]any{"v": v}}},
			"chunk's metadata": &Frame{Kind: KindChunk, ID: "c1", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{"v": v}}},
			"log's data":       &Frame{Kind: KindLog, ID: "c1", Seq: 1, Log: &toolkit.LogMessage{Level: "info", Data: v}},
			"ask's params":     &Frame{Kind: KindAsk, ID: "c1", Seq: 1, Ask: &Ask{Method: "elicitation/create", Params: v, Reply: "r"}},
		} {
			if _, err := Msgpack.Append(nil, msg); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
				t.Errorf("%s in a %s: %v, want an error saying it is nested too deep", name, what, err)
			}
		}
	}
	if _, err := Msgpack.Append(nil, &Request{ID: "c1", Input: map[string]any{"v": within}}); err != nil {
		t.Errorf("a struct chain %d deep: %v", maxEncodeDepth, err)
	}
}

// TestLibraryValueHoldingItselfRefusedSoon: the msgpack library's
// recursion into a value that holds itself is stopped after walking the
// goroutine's stack about as far as the bound, in all, not once per few
// thousand writes all the way down: the refusal cost the worker's call
// goroutine most of a second (seconds under the race detector), in
// which its caller heard nothing and could end the call worker_lost
// (TestStructHoldingItselfOverBus). The stack it grew to stays within
// twice the bound. The value is a CustomEncoder holding itself, which
// libWalk does not follow (a struct holding itself it refuses before the
// library sees it). In a child process, as a stack overflow is no panic
// a test survives.
func TestLibraryValueHoldingItselfRefusedSoon(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	self := &customNode{name: "a"}
	self.next = self
	pcs := make([]uintptr, 4*libMaxFrames)
	var walked, deepest int
	libLooked = func() {
		n := runtime.Callers(0, pcs)
		walked += min(n, libMaxFrames)
		deepest = max(deepest, n)
	}
	defer func() { libLooked = nil }()
	if _, err := Msgpack.Append(nil, &Request{ID: "c1", Input: map[string]any{"v": self}}); !errors.Is(err, errEncodeTooDeep) {
		t.Fatalf("a CustomEncoder holding itself: %v, want %v", err, errEncodeTooDeep)
	}
	if walked == 0 {
		t.Fatal("the depth watch never looked")
	}
	if walked > 4*libMaxFrames {
		t.Errorf("refusing a CustomEncoder holding itself walked %d frames of the stack in all, want at most %d (4 times the bound)", walked, 4*libMaxFrames)
	}
	if deepest > 2*libMaxFrames {
		t.Errorf("the stack grew %d frames deep, want at most %d (twice the bound)", deepest, 2*libMaxFrames)
	}
}

// pointerBox is a struct the msgpack library writes whose field may
// hold a pointer to an interface holding itself.
type pointerBox struct {
	Name string
	V    any
}

// TestLibraryValueRecursingWithoutWriting: a value the msgpack library
// follows through pointers and interfaces alone, writing nothing (var x
// any; x = &x, two holding each other, a chain of them a million deep),
// in a call's Input or a tool's metadata, log data or ask params, in a
// struct's field or a typed slice or map, is an error saying it is
// nested too deep, not a recursion until the stack overflows, which
// kills the process: the depth watch looks only when the library
// writes. Pointers within the bound are written as the library writes
// them. In a child process, as a stack overflow is no panic a test
// survives.
func TestLibraryValueRecursingWithoutWriting(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	var self any
	self = &self
	var a, b any
	a, b = &b, &a
	var chain any = "leaf"
	for range 1_000_000 {
		prev := chain
		chain = &prev
	}
	for name, v := range map[string]any{
		"a pointer to an interface holding it": self,
		"two holding each other":               a,
		"a chain a million deep":               chain,
		"in a struct's field":                  pointerBox{Name: "b", V: self},
		"in a pointer to a struct":             &pointerBox{Name: "b", V: self},
		"in a typed slice":                     []*any{&self},
		"in a typed map":                       map[string]*any{"p": &self},
		"in a map":                             map[string]any{"n": []any{self}},
	} {
		for what, msg := range map[string]Message{
			"input":            &Request{ID: "c1", Input: map[string]any{"v": v}},
			"final's metadata": &Frame{Kind: KindFinal, ID: "c1", Seq: 1, Final: &toolkit.Response{Metadata: map[string]any{"v": v}}},
			"chunk's metadata": &Frame{Kind: KindChunk, ID: "c1", Seq: 1, Chunk: &toolkit.Chunk{Metadata: map[string]any{"v": v}}},
			"log's data":       &Frame{Kind: KindLog, ID: "c1", Seq: 1, Log: &toolkit.LogMessage{Level: "info", Data: v}},
			"ask's params":     &Frame{Kind: KindAsk, ID: "c1", Seq: 1, Ask: &Ask{Method: "elicitation/create", Params: v, Reply: "r"}},
		} {
			if _, err := Msgpack.Append(nil, msg); !errors.Is(err, errEncodeTooDeep) {
				t.Errorf("%s in a %s: %v, want %v", name, what, err, errEncodeTooDeep)
			}
		}
	}
	var within any = "leaf"
	for range maxEncodeDepth {
		prev := within
		within = &prev
	}
	for name, v := range map[string]any{
		"a chain of pointers 10000 deep": within,
		"a struct holding pointers":      &pointerBox{Name: "b", V: &within},
		"a typed slice of pointers":      []*pointerBox{{Name: "x", V: 1}, nil},
	} {
		got, err := appendValue(nil, v)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := libEncode(t, v); !bytes.Equal(got, want) {
			t.Errorf("%s: wrote % x, the library % x", name, got, want)
		}
	}
}

// selfPtr is a pointer to itself.
type selfPtr *selfPtr

// embedSelf embeds a pointer to itself, and embedA and embedB each
// other, which the msgpack library inlines.
type (
	embedSelf struct {
		*embedSelf
		N int
	}
	embedA struct {
		*embedB
		A int
	}
	embedB struct {
		*embedA
		B int
	}
	embedsBox struct {
		*pointerBox
		N int
	}
)

// TestLibraryTypeRecursing: a value of a type the msgpack library
// cannot make its encoder for (a pointer to itself, type P *P; a struct
// embedding a pointer to itself, type E struct{ *E }), which it tried
// until the stack overflowed whatever the value (a nil one too), is an
// error naming the type; a struct embedding a pointer to another is
// written as the library writes it. In a child process, as a stack
// overflow is no panic a test survives.
func TestLibraryTypeRecursing(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	var p selfPtr
	p = &p
	for name, tt := range map[string]struct {
		v    any
		want string
	}{
		"a pointer to itself":              {p, "selfPtr is a pointer to itself"},
		"a nil pointer to itself":          {selfPtr(nil), "selfPtr is a pointer to itself"},
		"in a struct's field":              {struct{ P selfPtr }{}, "selfPtr is a pointer to itself"},
		"a struct embedding itself":        {embedSelf{N: 1}, "embedSelf embeds itself"},
		"a pointer to one":                 {&embedSelf{N: 1}, "embedSelf embeds itself"},
		"two structs embedding each other": {embedA{A: 1}, "embedA embeds itself"},
		"in a typed slice":                 {[]embedB{{B: 1}}, "embedB embeds itself"},
	} {
		_, err := Msgpack.Append(nil, &Request{ID: "c1", Input: map[string]any{"v": tt.v}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tt.want)
		}
	}
	for name, v := range map[string]any{
		"a struct embedding a pointer to another": embedsBox{pointerBox: &pointerBox{Name: "b", V: 1}, N: 2},
		"one embedding nil":                       embedsBox{N: 2},
	} {
		got, err := appendValue(nil, v)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := libEncode(t, v); !bytes.Equal(got, want) {
			t.Errorf("%s: wrote % x, the library % x", name, got, want)
		}
	}
}

// pointerLabels is a map type of pointers a struct embeds unexported,
// whose entries the msgpack library writes as fields of the struct's.
type pointerLabels map[string]*string

type labelled struct {
	Name string
	pointerLabels
}

// TestLibraryWalkSharedAndEmbedded: values the msgpack library writes
// are written, not refused by the walk before it: a pointer two fields
// share (a DAG, no cycle), and a map of pointers reached through an
// unexported embedded field, which the walk cannot copy entries from as
// it copies those of other maps.
func TestLibraryWalkSharedAndEmbedded(t *testing.T) {
	shared := &cycleNode{Name: "shared"}
	v := "v"
	for name, in := range map[string]any{
		"two fields sharing a pointer": &struct{ A, B *cycleNode }{shared, shared},
		"a slice sharing a pointer":    []*cycleNode{shared, shared, shared},
		"an embedded map of pointers":  labelled{Name: "x", pointerLabels: pointerLabels{"k": &v}},
		"a pointer to one":             &labelled{Name: "x", pointerLabels: pointerLabels{"nil": nil}},
	} {
		want, err := msgpack.Marshal(map[string]any{"v": in})
		if err != nil {
			t.Fatalf("%s: the library: %v", name, err)
		}
		got, err := Msgpack.Append(nil, &Request{ID: "c1", Input: map[string]any{"v": in}})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Contains(got, want[1:]) {
			t.Errorf("%s: encoded % x, want the library's % x within", name, got, want[1:])
		}
	}
}
