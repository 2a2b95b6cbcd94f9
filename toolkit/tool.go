package toolkit

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolbus/toolbus/internal/valuewalk"
)

// Handler runs one call. It streams its output through w and returns nil on
// success or an error that ends the call (see Error and CodeOf). Every call
// is a stream; a unary tool simply writes one chunk.
//
// A handler must not use w after it returns, nor from several goroutines at
// once. The dispatcher guarantees exactly one final response whatever the
// handler does: returns an error, panics, or ignores a cancelled ctx until
// it returns.
type Handler func(ctx context.Context, call *Call, w Writer) error

// Middleware wraps a Handler. The first middleware registered is the
// outermost:
//
//	Use(a, b) ─▶ a(b(tool)):  a-pre → b-pre → tool → b-post → a-post
//
// A middleware may rewrite call.Input before calling next, transform or
// drop the chunks it passes on (by wrapping w), short-circuit by writing its
// own chunks and not calling next, or end the call with an error. It may
// set or delete Input's keys in place (Call and Invoke hand the chain a
// copy of their caller's map, Dispatch the transport's own), but not
// change a map or slice nested in it, which is the caller's: it copies
// that first.
//
// It may run next on goroutines of its own: handing it w, it waits for it
// before returning (w is not used after the handler returns, nor from
// several goroutines at once); several runs at once (a hedge) each get a
// writer of their own. One that returns while next still runs, with a
// writer of its own, leaves the tool to the call's answer: Dispatch tells
// a RanWriter or NotRunWriter what the tool did until then, and a tool not
// entered by then is not run for the call (its next returns ErrStopped).
//
// It may run the tool itself by its Handler (call.Tool.Handler), which
// skips the chain's rest: the middleware after it, the tool's own
// (WithMiddleware), its presets (WithPresets) and the check that the
// call's context has not ended. Whichever it calls, Dispatch learns that
// the tool ran from the Call or the context handed on, one at least of
// which must come from the middleware's own (see Call).
type Middleware func(next Handler) Handler

// Chain composes middlewares around h, first = outermost.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// Writer is where a handler streams its output. Write sends a chunk (a
// delta of the result); Progress sends a UI-only progress report. Both
// return ErrStopped (or a transport error) once nobody is listening; the
// handler should then return.
type Writer interface {
	Write(c Chunk) error
	Progress(p Progress) error
}

// WriterFuncs adapts two functions to a Writer; a nil function discards.
type WriterFuncs struct {
	Chunk func(Chunk) error
	Prog  func(Progress) error
}

func (w WriterFuncs) Write(c Chunk) error {
	if w.Chunk == nil {
		return nil
	}
	return w.Chunk(c)
}

func (w WriterFuncs) Progress(p Progress) error {
	if w.Prog == nil {
		return nil
	}
	return w.Prog(p)
}

// ToolCall is a request to run a tool, as an agent sends it.
type ToolCall struct {
	// ID identifies the call; the final response carries it.
	ID string `json:"id" msgpack:"id"`
	// Name is the tool's name.
	Name string `json:"name" msgpack:"name"`
	// Input is the model's arguments, a JSON object, as encoding/json
	// decodes one into a map: a number may be a float64 even where the
	// schema asks for an integer, which a whole one (3.0) is. A
	// json.Number (Decoder.UseNumber) is the number it spells, at any
	// depth and in typed slices and maps too (NumberValue). Typed slices
	// and maps a Go caller builds ([]string, map[string]int) are
	// validated and reach the tool as their elements would in []any and
	// map[string]any.
	Input map[string]any `json:"input,omitempty" msgpack:"input,omitempty"`
	// RawInput is the model's arguments as the text it wrote, instead of
	// Input: it is parsed, and repaired when it is not strict JSON
	// (ParseRawInput); what cannot be repaired ends the call
	// invalid_input with a message telling the model to resend it.
	RawInput string `json:"raw_input,omitempty" msgpack:"raw_input,omitempty"`
	// InputKeys are Input's keys in the order the caller wrote them, and
	// InputFloats those of its keys whose values the caller wrote as
	// floating-point numbers (1.0, 1e3, a msgpack float), where whoever
	// decoded Input read them (the bus's worker does for reset_tools); a
	// map keeps neither. AgentScope reads the model's arguments in the
	// order written, and json.loads makes 1.0 a float: reset_tools names
	// unknown groups and the first value that is not a bool in this
	// order, and a whole float64 value, which encoding/json also makes of
	// 1, as the float InputFloats says it is. RawInput, when set, gives
	// both itself. Not part of any wire message.
	InputKeys   []string `json:"-" msgpack:"-"`
	InputFloats []string `json:"-" msgpack:"-"`
	// Session keys the group activation state (and, with the bus, more).
	Session string `json:"session,omitempty" msgpack:"session,omitempty"`
	// Identity is the caller the call is made for, as the transport
	// vouches for it ("" for an anonymous call): sessions of different
	// identities never share state, whatever their names (SessionScope).
	Identity string `json:"identity,omitempty" msgpack:"identity,omitempty"`
	// GroupsRevision is the group-state revision returned by the session's
	// last reset_tools; a GroupState honours at least that revision.
	GroupsRevision uint64 `json:"groups_revision,omitempty" msgpack:"groups_revision,omitempty"`
	// Durable asks a bus to carry the call on its durable path (a
	// JetStream work queue: the call survives the loss of the worker
	// running it when its tool is idempotent or read-only), whatever the
	// tool's default (Tool.Durable). In process it changes nothing.
	Durable bool `json:"durable,omitempty" msgpack:"durable,omitempty"`
	// KeepResult asks a bus to keep the call's final for a while, so a
	// caller that lost its connection can fetch it by id (bus
	// Client.Result). In process it changes nothing.
	KeepResult bool `json:"keep_result,omitempty" msgpack:"keep_result,omitempty"`
	// IdempotencyKey names the call across the times it is sent (a
	// retry on another worker has a new ID but the same key); "" means
	// ID. Read it with Key.
	IdempotencyKey string `json:"idempotency_key,omitempty" msgpack:"idempotency_key,omitempty"`
	// Attempt is which delivery of a durable call this is (1 for the
	// first), set by the bus worker running it; 0 on the core path and in
	// process. Not part of any wire message.
	Attempt int `json:"-" msgpack:"-"`
}

// Key is the call's idempotency key: IdempotencyKey, or ID when that is
// empty. A tool with effects elsewhere passes it on (as a request id, an
// Idempotency-Key header) so that a repeat of the call is recognised.
func (c ToolCall) Key() string {
	if c.IdempotencyKey != "" {
		return c.IdempotencyKey
	}
	return c.ID
}

// Scope is the call's session scope: SessionScope(Identity, Session).
func (c ToolCall) Scope() string { return SessionScope(c.Identity, c.Session) }

// SessionScope is the key a GroupState (and any per-session store) keeps a
// session under: the session itself for an anonymous caller, and a form
// that no anonymous session name takes for an identity's session (a NUL,
// the identity, a NUL, the session), so identities never share sessions.
// Transports refuse anonymous session names that start with a NUL.
func SessionScope(identity, session string) string {
	if identity == "" {
		return session
	}
	return "\x00" + identity + "\x00" + session
}

// SplitScope is the inverse of SessionScope.
func SplitScope(scope string) (identity, session string) {
	if len(scope) > 0 && scope[0] == 0 {
		if id, s, ok := strings.Cut(scope[1:], "\x00"); ok {
			return id, s
		}
	}
	return "", scope
}

// Call is what a Handler receives: the request plus the tool it resolved
// to. Middlewares may replace Input or change its keys (see Middleware);
// Tool must be treated as read-only.
// A middleware that changes the call may pass its next handler (or the
// tool's Handler, Call.Tool.Handler) a copy of the Call it was given or
// one it builds anew, with the context it was given or one derived from
// it: Dispatch learns from either whether the tool was entered
// (RanWriter, NotRunWriter). One that hands on neither (a Call built anew
// with a context not derived from its own, such as context.Background())
// hides the tool's run from Dispatch, nothing then tying the run to its
// call: a RanWriter is not told that the tool ran, and a transport takes
// the call's failure for one that came before its tool (the bus does not
// mark its final tool_ran).
type Call struct {
	ToolCall
	Tool *Tool
	// d is the dispatch running the call, told by unlessEnded whether
	// the tool was entered; nil for a Call not made by Dispatch (a
	// middleware's own carries it on the context: dispatchOf).
	d *dispatch
}

// Idempotency says what repeating a call does, as in connect-go.
type Idempotency int

const (
	// IdempotencyUnknown: repeating the call may repeat its side effects.
	IdempotencyUnknown Idempotency = iota
	// NoSideEffects: the call changes nothing; it can always be repeated.
	NoSideEffects
	// Idempotent: repeating the call leaves the same state as doing it once.
	Idempotent
)

func (i Idempotency) String() string {
	switch i {
	case NoSideEffects:
		return "no_side_effects"
	case Idempotent:
		return "idempotent"
	}
	return "unknown"
}

// Retryable reports whether a failed call may be retried safely.
func (i Idempotency) Retryable() bool { return i == NoSideEffects || i == Idempotent }

// Tool is a named, schema-described Handler. Build one with Func, Stream
// or Raw (or a literal with Name, Description, InputSchema and Handler);
// describe it further with Options when it is registered (Toolkit.Add:
// InGroup, ReadOnly, WithIdempotency, ConcurrencyUnsafe, WithPresets,
// WithMiddleware), or with Describe outside a toolkit. The methods read
// what the options set; a Tool a toolkit hands out (Call.Tool, Get, Tools)
// is read-only.
type Tool struct {
	// Name is one NATS subject token: [A-Za-z0-9_-]+.
	Name        string
	Description string
	// InputSchema is the JSON schema (type object) of the input.
	InputSchema map[string]any
	// Handler runs the tool. A registered tool's (Get, Tools,
	// Call.Tool) is the one it was registered with, marked: a middleware
	// that calls it itself, not through the chain's rest, has the call's
	// Dispatch told that the tool ran (RanWriter), as the chain's rest
	// does, and it does not run the tool for a call Dispatch has
	// answered (ErrStopped). It runs the tool alone: without its presets
	// (WithPresets), its own middleware (WithMiddleware) or the check
	// that the call's context has not ended.
	Handler Handler
	// run is a registered tool's own handler, which its chain runs;
	// Handler is it marked (marked).
	run Handler

	readOnly          bool
	durable           bool
	sessionBound      bool
	originalName      string // the name before ConflictRename
	kind              string
	concurrencyUnsafe bool
	idempotency       Idempotency
	group             string
	presets           map[string]any
	presetsID         uint64 // Tool.PresetsID
	middleware        []Middleware
	order             []KeyOrder // InputSchema's declaration order (order.go)
	listedWith        func() []string
	// decodes decodes an input into a typed tool's input type, for
	// presets to be checked at Add (checkPresets); nil for a Raw tool.
	decodes func(input map[string]any) error

	err error // a construction error, reported by Toolkit.Add
}

// ReadOnly reports whether the tool changes nothing (option ReadOnly):
// permissions may allow it more freely, the cache middleware may cache it.
func (t *Tool) ReadOnly() bool { return t.readOnly }

// PresetsID identifies the tool's presets (option WithPresets) without
// revealing them, for middleware that keys what a call returns by its
// input (a cache: the input it sees has no presets, which are merged
// innermost): 0 for a tool without presets, and a number of its own for
// each WithPresets applied, so a tool registered again with other
// presets (an account, a key) is told from the one before.
func (t *Tool) PresetsID() uint64 { return t.presetsID }

// Durable reports whether the tool's calls go through a fleet's durable
// queue by default (option Durable).
func (t *Tool) Durable() bool { return t.durable }

// OriginalName is the name the tool was given when ConflictRename
// registered it under another; its Name otherwise.
func (t *Tool) OriginalName() string {
	if t.originalName != "" {
		return t.originalName
	}
	return t.Name
}

// SessionBound reports whether the tool keeps state on the machine that
// runs it between a session's calls (files, a process, a stateful MCP
// client): a fleet sends a session's calls of such tools to one worker.
func (t *Tool) SessionBound() bool { return t.sessionBound }

// Kind says what sort of tool it is, for policies that treat sorts
// differently (package permission): one of the Kind constants, set by the
// code that builds the tool (option WithKind); "" is a plain function tool.
// It never follows from the tool's name.
func (t *Tool) Kind() string { return t.kind }

// Tool kinds (WithKind).
const (
	KindShell     = "shell"      // runs a shell command; input "command"
	KindPython    = "python"     // runs Python code; input "code"
	KindFileRead  = "file_read"  // reads a file; input "file_path"
	KindFileWrite = "file_write" // writes a file; input "file_path"
	KindSkill     = "skill"      // shows a skill's instructions
	KindMCP       = "mcp"        // proxies a tool of an MCP server
	KindMeta      = "meta"       // reset_tools
)

// ConcurrencySafe reports whether the tool may run concurrently with other
// calls; it is, unless registered with ConcurrencyUnsafe.
func (t *Tool) ConcurrencySafe() bool { return !t.concurrencyUnsafe }

// Idempotency says whether repeating a call is safe (option
// WithIdempotency; ReadOnly implies NoSideEffects).
func (t *Tool) Idempotency() Idempotency { return t.idempotency }

// Group is the tool's group (option InGroup); BasicGroup when it has none.
func (t *Tool) Group() string {
	if t.group == "" {
		return BasicGroup
	}
	return t.group
}

// BasicGroup is the group that is always active.
const BasicGroup = "basic"

// MaxNameLen bounds a tool's name: it is a token of the subjects its
// calls travel on, and a NATS server closes the connection of a client
// that sends a protocol line longer than its max_control_line (4 KiB by
// default), so a subscription or call under a longer name would cut the
// worker or caller off the bus. It is also the name of the tool's
// consumer of the durable calls stream, which JetStream bounds at 255
// bytes. It bounds a group's name too (AddGroup, InGroup), which travels
// in its tools' announcements and in the session state the bus stores.
const MaxNameLen = 255

// ValidToolName reports whether name can be a tool's name: a ValidName
// of at most MaxNameLen bytes.
func ValidToolName(name string) bool { return len(name) <= MaxNameLen && ValidName(name) }

// ValidName reports whether name can be a tool or group name: one NATS
// subject token made of [A-Za-z0-9_-]. It is cheap enough to run on every
// call.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Func builds a unary tool from a typed function. The input schema is
// inferred from In (a struct: `json` tags name the properties, `jsonschema`
// tags describe them, `default`, `enum`, `minimum` and `maximum` tags add
// those keywords (see applyTags; also on the fields of a nested struct, a
// pointer to one, a slice or a map of them), fields without omitempty/omitzero and
// without a `default` tag are required; a json.RawMessage field takes any
// JSON value, a field decoding itself from text (net.IP) a string, and
// one decoding itself from JSON (a json.Unmarshaler but time.Time,
// slog.Level and big.Int) any value; an In decoding itself from JSON
// (its own UnmarshalJSON) is an open object, {"type": "object",
// "properties": {}}, every input its method's to judge, and one decoding
// itself from text (UnmarshalText only) an error at Add;
// titles are stripped; a json tag name encoding/json would ignore, the
// tag's string option on a scalar field, a field of a non-empty
// interface type, an embedded pointer to an unexported struct, an
// embedded type decoding itself (UnmarshalJSON, UnmarshalText), two
// fields under one JSON name and a recursive type are errors at Add). An absent field with a default is
// given its default before the function runs. An integer field takes a
// whole number sent as a float (3.0, a float64 from encoding/json) as
// that integer, and refuses a fraction or one beyond its type's range
// (see the package doc). The return value becomes
// one text chunk: a string as is, a Chunk as given, anything else as JSON
// (nil as "null"; a nil *Chunk writes nothing). An error holding a nil
// pointer (var err *MyError; return out, err) is no error, as the
// function most likely meant, and so is one Stream's function returns.
func Func[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) *Tool {
	return Stream(name, description, func(ctx context.Context, in In, w Writer) error {
		out, err := fn(ctx, in)
		if err != nil && !nilPointer(err) {
			return err
		}
		var c Chunk
		if s, ok := any(out).(string); ok { // as ValueChunk, without boxing out
			c = Text(s)
		} else if c, err = ValueChunk(out); err != nil {
			return err
		}
		if c.Content == nil && c.Metadata == nil && c.State == "" {
			return nil // nothing to say (a state alone, denied say, is something)
		}
		return writeResult(w, c)
	})
}

// Stream builds a streaming tool from a typed function that writes its
// output to w. The schema is inferred from In as for Func.
func Stream[In any](name, description string, fn func(ctx context.Context, in In, w Writer) error) *Tool {
	schema, order, err := schemaFor(reflect.TypeFor[In]())
	t := &Tool{Name: name, Description: description, InputSchema: schema, order: order, err: err}
	defaults := schemaDefaults(schema)
	plan := newFieldPlan(reflect.TypeFor[In]())
	t.decodes = func(input map[string]any) error {
		var in In
		return decodeInput(input, &in)
	}
	t.Handler = func(ctx context.Context, call *Call, w Writer) error {
		input := withDefaults(call.Input, defaults)
		var in In
		if plan == nil || !plan.decode(input, reflect.ValueOf(&in).Elem()) {
			var zero In
			in = zero
			if err := decodeInput(input, &in); err != nil {
				return Errorf(CodeInvalidInput, "Input validation failed for tool '%s': %v", call.Name, err)
			}
		}
		if err := fn(ctx, in, w); err != nil && !nilPointer(err) {
			return err
		}
		return nil
	}
	return t
}

// nilPointer reports whether err holds a nil pointer (var e *MyError;
// return e): a typed tool's function meant no error by it, and its Error
// method would most likely panic.
func nilPointer(err error) bool {
	v := reflect.ValueOf(err)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// defaults are the defaults of an object schema's properties, and those of
// the values nested in them (an object property's own properties, an array
// property's items', a map property's values', at any depth), for
// withDefaults.
type defaults struct {
	values map[string]any
	nested map[string]*defaults
	items  *defaults // an array's elements'
	each   *defaults // a map's values' (additionalProperties)
}

// schemaDefaults collects the "default" of each property of schema, at any
// depth, and those of its items when it is an array, of its values when
// it is a map (additionalProperties, without properties); nil when there
// is none.
func schemaDefaults(schema map[string]any) *defaults {
	var out *defaults
	if items, ok := schema["items"].(map[string]any); ok {
		if sub := schemaDefaults(items); sub != nil {
			out = &defaults{items: sub}
		}
	}
	props, _ := schema["properties"].(map[string]any)
	if values, ok := schema["additionalProperties"].(map[string]any); ok && props == nil {
		if sub := schemaDefaults(values); sub != nil {
			if out == nil {
				out = &defaults{}
			}
			out.each = sub
		}
	}
	for name, p := range props {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		sub := schemaDefaults(m)
		if d, ok := m["default"]; ok {
			if out == nil {
				out = &defaults{}
			}
			if out.values == nil {
				out.values = map[string]any{}
			}
			if sub != nil {
				if y := filledValue(d, sub); y != nil { // a default object's own defaults
					d = y
				}
			}
			out.values[name] = d
		}
		if sub != nil {
			if out == nil {
				out = &defaults{}
			}
			if out.nested == nil {
				out.nested = map[string]*defaults{}
			}
			out.nested[name] = sub
		}
	}
	return out
}

// withDefaults returns input with the defaults of absent properties filled
// in, in nested objects too, so a typed tool sees the default its schema
// advertises, not Go's zero value. input itself is never modified.
func withDefaults(input map[string]any, d *defaults) map[string]any {
	if out := filled(input, d); out != nil {
		return out
	}
	return input
}

// filled is withDefaults returning nil when no default is missing.
func filled(input map[string]any, d *defaults) map[string]any {
	if d == nil {
		return nil
	}
	var out map[string]any
	set := func(k string, v any) {
		if out == nil {
			out = make(map[string]any, len(input)+len(d.values))
			maps.Copy(out, input)
		}
		out[k] = v
	}
	for k, v := range d.values {
		if _, ok := input[k]; !ok {
			set(k, cloneJSON(v))
		}
	}
	for k, sub := range d.nested {
		if y := filledValue(input[k], sub); y != nil {
			set(k, y)
		}
	}
	if d.each != nil {
		for k, v := range input {
			if y := filledValue(v, d.each); y != nil {
				set(k, y)
			}
		}
	}
	return out
}

// filledValue is filled for a nested value: an object, or an array whose
// elements (objects, or arrays of them) get the items' defaults; nil when
// no default is missing.
func filledValue(v any, d *defaults) any {
	switch x := v.(type) {
	case map[string]any:
		if y := filled(x, d); y != nil {
			return y
		}
	case []any:
		if d.items == nil {
			return nil
		}
		var items []any
		for i, e := range x {
			if y := filledValue(e, d.items); y != nil {
				if items == nil {
					items = slices.Clone(x)
				}
				items[i] = y
			}
		}
		if items != nil {
			return items
		}
	}
	return nil
}

// Raw builds a tool from a handler and a schema that comes from elsewhere
// (an MCP server, a config file). The schema must be a JSON object schema:
// "type": "object" with a "properties" object.
func Raw(name, description string, schema map[string]any, h Handler) *Tool {
	t := &Tool{Name: name, Description: description, InputSchema: schema, Handler: h}
	if schema == nil {
		t.InputSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return t
}

// ValueChunk turns a plain return value into a chunk as AgentScope 2.x
// does: a string as is, a Chunk or *Chunk unchanged (a nil *Chunk as
// nothing), any other value, nil included ("null", as json.dumps(None)),
// as JSON written as Python's json.dumps(v, ensure_ascii=False) writes
// it: non-ASCII kept, HTML not escaped, ", " and ": " between items (a
// map's keys sorted, a struct's fields in order, where Python keeps a
// dict's insertion order: a tool that must keep an object's key order
// returns it as a json.RawMessage, whose keys stay as written). A float
// JSON cannot encode is written as json.dumps writes it ("NaN",
// "Infinity", "-Infinity"), alone and inside a map, slice, array,
// struct or pointer (nonFiniteJSON); another value JSON cannot encode
// is printed when it holds no others (a func, a channel); otherwise (a
// map, slice, array, struct or pointer) JSON's error is returned, since
// fmt prints a map or slice that holds itself until the stack overflows.
// A value nested deeper than 10000 levels (ErrNestedTooDeep), as one
// holding itself is, or that would write more than three times
// DefaultMaxResultBytes values and bytes (one whose two fields point to
// the same next node, forty levels down, is a terabyte written, as is a
// list holding the same long list or string many times) is an error
// before encoding/json follows it (internal/valuewalk): it would recurse
// until the stack overflows, or write until the process is killed.
func ValueChunk(v any) (Chunk, error) {
	switch x := v.(type) {
	case nil:
		return Text("null"), nil
	case string:
		return Text(x), nil
	case Chunk:
		return x, nil
	case *Chunk:
		if x == nil {
			return Chunk{}, nil
		}
		return *x, nil
	}
	switch err := valuewalk.JSON.Walk(v, 4*maxNumberDepth, 3*DefaultMaxResultBytes); err {
	case valuewalk.ErrTooDeep:
		return Chunk{}, ErrNestedTooDeep
	case valuewalk.ErrTooLarge:
		return Chunk{}, errValueTooLarge
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Interface:
			var uv *json.UnsupportedValueError
			if errors.As(err, &uv) && (uv.Str == "NaN" || uv.Str == "+Inf" || uv.Str == "-Inf") {
				if b, ok := nonFiniteJSON(v); ok {
					return Text(string(pySeparators(b))), nil
				}
			}
			return Chunk{}, err
		case reflect.Float32, reflect.Float64:
			// NaN or an infinity, which json.dumps writes as JavaScript
			// names them, where fmt prints "+Inf".
			switch f := rv.Float(); {
			case math.IsInf(f, 1):
				return Text("Infinity"), nil
			case math.IsInf(f, -1):
				return Text("-Infinity"), nil
			}
			return Text("NaN"), nil
		}
		return Text(fmt.Sprint(v)), nil
	}
	return Text(string(pySeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))), nil
}

// errInputTooLarge is a typed tool's error for an input that would
// write too much to be decoded.
var errInputTooLarge = fmt.Errorf("the input would encode to more than %d MiB", DefaultMaxResultBytes>>20)

// errValueTooLarge is ValueChunk's error for a value that would write
// too much.
var errValueTooLarge = fmt.Errorf("toolkit: the value would encode to more than %d MiB", DefaultMaxResultBytes>>20)

// pySeparators spaces compact JSON as Python's json.dumps does: a space
// after each ',' and ':' outside strings. It also writes U+2028 and
// U+2029 as they are, where Go's writer escapes them (for JavaScript) and
// json.dumps(ensure_ascii=False) does not.
func pySeparators(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/4)
	in, esc := false, false
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		if esc && c == 'u' && i+5 <= len(compact) && string(compact[i+1:i+4]) == "202" && (compact[i+4] == '8' || compact[i+4] == '9') {
			out = utf8.AppendRune(out[:len(out)-1], rune(0x2020+int(compact[i+4]-'0'))) // drop the backslash
			i += 4
			esc = false
			continue
		}
		out = append(out, c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ',' || c == ':'):
			out = append(out, ' ')
		}
	}
	return out
}

// decodeInput decodes a typed tool's input into dst through its JSON:
// an in-process caller's input may hold a map twice, and forty levels of
// maps holding the same next map twice are a terabyte written, so it is
// walked first, as a function tool's result is (ValueChunk).
func decodeInput(input map[string]any, dst any) error {
	if len(input) == 0 {
		input = map[string]any{}
	}
	switch valuewalk.JSON.Walk(input, 4*maxNumberDepth, 3*DefaultMaxResultBytes) {
	case valuewalk.ErrTooDeep:
		return errNumbersTooDeep
	case valuewalk.ErrTooLarge:
		return errInputTooLarge
	}
	b, err := json.Marshal(input)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// SchemaFor infers the JSON input schema of T, which must be a struct (or
// pointer to one). See Func for the rules.
func SchemaFor[T any]() (map[string]any, error) {
	m, _, err := schemaFor(reflect.TypeFor[T]())
	return m, err
}

// openSchemas writes the schema that takes any value (a json.RawMessage
// field's, typeSchemas) as {}, not as the JSON Schema `true` jsonschema-go
// writes, which a model's function schema may not accept.
func openSchemas(schema map[string]any) {
	if props, ok := schema["properties"].(map[string]any); ok {
		for k, v := range props {
			switch v := v.(type) {
			case bool:
				if v {
					props[k] = map[string]any{}
				}
			case map[string]any:
				openSchemas(v)
			}
		}
	}
	switch v := schema["items"].(type) {
	case bool:
		if v {
			schema["items"] = map[string]any{}
		}
	case map[string]any:
		openSchemas(v)
	}
	if v, ok := schema["additionalProperties"].(map[string]any); ok { // a map's values
		openSchemas(v)
	}
}

// typeSchemas are the schemas of types jsonschema-go gets wrong for a
// tool's input: a json.RawMessage field takes any JSON value (a
// free-form argument), not an array of bytes; a big.Int, a JSON number
// (its UnmarshalJSON refuses a string), not a string. time.Time and
// slog.Level, json.Unmarshalers whose schema jsonschema-go knows (a
// string), keep it. See also inputTypeSchemas.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[big.Int]():         {Type: "integer"},
	reflect.TypeFor[time.Time]():       {Type: "string"},
	reflect.TypeFor[slog.Level]():      {Type: "string"},
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesFromText reports whether encoding/json decodes a t with its
// UnmarshalText: t (or *t) is a TextUnmarshaler and not a
// json.Unmarshaler. Such a value is a JSON string.
func decodesFromText(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(textUnmarshalerType) && !pt.Implements(jsonUnmarshalerType)
}

// decodesFromJSON reports whether encoding/json decodes a t with its
// UnmarshalJSON: t (or *t) is a json.Unmarshaler. What JSON it takes
// only its method knows.
func decodesFromJSON(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(jsonUnmarshalerType)
}

// decodesItself reports whether encoding/json decodes the struct rt, a
// tool's whole input, with an UnmarshalJSON of its own, not one promoted
// from a type it embeds (which checkJSONTags refuses).
func decodesItself(rt reflect.Type) bool {
	if !decodesFromJSON(rt) {
		return false
	}
	for i := range rt.NumField() {
		if f := rt.Field(i); f.Anonymous && decodesFromJSON(heldType(f.Type)) {
			return false
		}
	}
	return true
}

// takesAnyValue reports whether the schema of t in a tool's input
// (inputTypeSchemas) takes any value: {}, which jsonschema-go, for a
// pointer to t, makes {"type": ["null"]}.
func takesAnyValue(t reflect.Type) bool {
	if s := typeSchemas[t]; s != nil {
		return s.Type == "" && s.Types == nil
	}
	return decodesFromJSON(t)
}

// inputTypeSchemas is typeSchemas with the schema of a string for each
// type the fields of rt hold, at any depth, that encoding/json decodes
// with its UnmarshalText (a TextUnmarshaler that is not a
// json.Unmarshaler: net.IP, netip.Addr): it takes a JSON string (or
// null) and nothing else, where jsonschema-go writes the schema of its
// Go kind (an array of bytes, an object without properties), which no
// string passes. A type decoding itself with its UnmarshalJSON (a
// json.Unmarshaler typeSchemas does not name) takes any value, {}: its
// Go kind says nothing of the JSON its method takes (a struct read from
// a string), and the method refuses what it does not take, as
// invalid_input.
func inputTypeSchemas(rt reflect.Type) map[reflect.Type]*jsonschema.Schema {
	m := typeSchemas
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if seen[t] || typeSchemas[t] != nil {
			return
		}
		seen[t] = true
		var s *jsonschema.Schema
		switch {
		case decodesFromText(t):
			s = &jsonschema.Schema{Type: "string"}
		case decodesFromJSON(t):
			s = &jsonschema.Schema{}
		}
		if s != nil {
			if len(m) == len(typeSchemas) {
				m = maps.Clone(typeSchemas)
			}
			m[t] = s
			return
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() || f.Anonymous {
					walk(f.Type)
				}
			}
		}
	}
	for i := range rt.NumField() { // the input itself is an object
		if f := rt.Field(i); f.IsExported() || f.Anonymous {
			walk(f.Type)
		}
	}
	return m
}

// schemaFor is SchemaFor with the schema's declaration order (the fields'
// order, see order.go).
func schemaFor(rt reflect.Type) (map[string]any, []KeyOrder, error) {
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if rt.Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("toolkit: tool input type %v is not a struct", rt)
	}
	if decodesItself(rt) { // its method, not its fields, says what it takes
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil, nil
	}
	if err := checkJSONTags(rt, map[reflect.Type]bool{}); err != nil {
		return nil, nil, err
	}
	if decodesFromText(rt) {
		return nil, nil, fmt.Errorf("toolkit: tool input type %v decodes itself from text (UnmarshalText), which encoding/json does from a JSON string only, never from the object a tool's input is; give it an UnmarshalJSON, or remove its UnmarshalText", rt)
	}
	if err := checkRecursion(rt, map[reflect.Type]bool{}, map[reflect.Type]bool{}); err != nil {
		return nil, nil, err
	}
	s, err := jsonschema.ForType(rt, &jsonschema.ForOptions{TypeSchemas: inputTypeSchemas(rt)})
	if err != nil {
		return nil, nil, fmt.Errorf("toolkit: inferring the schema of %v: %w", rt, err)
	}
	if err := applyTags(rt, s); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(s) // properties in PropertyOrder: the fields' order
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, err
	}
	m = ExactIntegers(b, m) // an enum or default beyond ±2^53 as tagged
	order, err := OrderOf(b)
	if err != nil {
		return nil, nil, err
	}
	StripTitles(m)
	openSchemas(m)
	if m["properties"] == nil {
		m["properties"] = map[string]any{}
	}
	return m, order, nil
}

// checkJSONTags refuses a json tag name encoding/json ignores (see
// validJSONName), the tag's string option on a scalar, a field of a
// non-empty interface type, and an embedded pointer to an unexported
// struct type (whose fields the schema has and encoding/json never
// decodes), on the fields of rt and of the types it holds, at any depth. jsonschema-go and the fast path (decode.go) take such a name as
// the property's, while encoding/json, which decodes every input the fast
// path does not, takes the Go field name: the schema would require a
// property whose value never reached the field.
func checkJSONTags(rt reflect.Type, seen map[reflect.Type]bool) error {
	rt = heldType(rt)
	if rt.Kind() != reflect.Struct || seen[rt] {
		return nil
	}
	seen[rt] = true
	if err := checkJSONNames(rt); err != nil {
		return err
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && !f.IsExported() && name == "" && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
			return fmt.Errorf("toolkit: field %s of %v: an embedded pointer to the unexported struct type %v cannot be input: encoding/json cannot allocate it to decode its fields (json: cannot set embedded pointer to unexported struct); embed the struct as a value, or export its type", f.Name, rt, f.Type.Elem())
		}
		if name != "" && !validJSONName(name) {
			return fmt.Errorf("toolkit: field %s of %v: json tag name %q is one encoding/json ignores (it would decode the field as %q, not as the schema's %q); use letters, digits, spaces and !#$%%&()*+-./:;<=>?@[]^_{|}~", f.Name, rt, name, f.Name, name)
		}
		if quotedScalar(f.Type) && slices.Contains(strings.Split(opts, ","), "string") {
			return fmt.Errorf("toolkit: field %s of %v: the json tag's string option is not supported: encoding/json would decode the field only from a JSON string holding its value, where the schema asks for a %v", f.Name, rt, f.Type)
		}
		if it := heldType(f.Type); it.Kind() == reflect.Interface && it.NumMethod() > 0 {
			return fmt.Errorf("toolkit: field %s of %v: a field of the non-empty interface type %v cannot be input: its schema takes any value, which encoding/json cannot decode into it (only null); use a concrete type, any, or json:\"-\"", f.Name, rt, it)
		}
		if ht := heldType(f.Type); decodesFromJSON(ht) || decodesFromText(ht) {
			if f.Anonymous {
				return fmt.Errorf("toolkit: field %s of %v: the embedded type %v decodes itself (UnmarshalJSON or UnmarshalText), so it adds no properties of its own to %v's object, and its method, promoted to %v, would decode the whole input, leaving the other fields unset; make it a field of its own name (X %v `json:\"x\"`), a property taking what its method takes", f.Name, rt, f.Type, rt, rt, f.Type)
			}
			continue // its fields are not input: its method decodes it
		}
		if err := checkJSONTags(f.Type, seen); err != nil {
			return err
		}
	}
	return nil
}

// checkRecursion refuses an input type holding a struct that holds
// itself (a tree, through a slice, a map or a pointer), naming the field
// where it recurs: jsonschema-go infers no schema for it ("cycle
// detected"). onPath holds the structs being walked, done those walked.
// A type decoding itself (json.Unmarshaler, TextUnmarshaler) or of
// typeSchemas is not walked: its schema is not its fields'.
func checkRecursion(t reflect.Type, onPath, done map[reflect.Type]bool) error {
	t = schemaHeld(t)
	if t.Kind() != reflect.Struct || done[t] || typeSchemas[t] != nil || decodesFromJSON(t) || decodesFromText(t) {
		return nil
	}
	onPath[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous || f.Tag.Get("json") == "-" ||
			f.Anonymous && derefType(f.Type).Kind() != reflect.Struct { // jsonschema-go leaves it out
			continue
		}
		if held := schemaHeld(f.Type); onPath[held] {
			return fmt.Errorf("toolkit: field %s of %v: the input type %v is recursive (the field holds it again), and no schema is inferred for a recursive type; make the field a json.RawMessage (any JSON, which the tool decodes), or give the tool a Raw schema that refers to itself ($defs and $ref)", f.Name, t, held)
		}
		if err := checkRecursion(f.Type, onPath, done); err != nil {
			return err
		}
	}
	delete(onPath, t)
	done[t] = true
	return nil
}

// schemaHeld is the type whose schema t's holds, through pointers,
// slices, arrays and maps' values (heldType), stopping at a type whose
// schema is not its Go kind's: one of typeSchemas, or one decoding
// itself (json.Unmarshaler, TextUnmarshaler).
func schemaHeld(t reflect.Type) reflect.Type {
	for typeSchemas[t] == nil && !decodesFromJSON(t) && !decodesFromText(t) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
	return t
}

// checkJSONNames refuses a struct two of whose fields (its own, or
// promoted from the structs it embeds) have one JSON name: jsonschema-go
// writes the property once, with the last one's schema, and lists it
// twice in "required", while encoding/json decodes the value into the
// field it prefers (a tagged one, then the shallower) or, between two
// alike, into neither.
func checkJSONNames(rt reflect.Type) error {
	names := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(rt) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, found := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && !found {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if g, ok := names[name]; ok {
			return fmt.Errorf("toolkit: fields %s and %s of %v are both the JSON property %q: encoding/json decodes its value into one of them, or neither, where the schema has one property; give each a name of its own, or tag one json:\"-\"", g.Name, f.Name, rt, name)
		}
		names[name] = f
	}
	return nil
}

// heldType is the type rt holds, through pointers, slices, arrays and
// maps' values: the type a JSON value for it decodes into at last.
func heldType(rt reflect.Type) reflect.Type {
	for {
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			rt = rt.Elem()
		default:
			return rt
		}
	}
}

// quotedScalar reports whether encoding/json honours a json tag's string
// option on a field of type ft: a string, number or bool, or an unnamed
// pointer to one.
func quotedScalar(ft reflect.Type) bool {
	if ft.Name() == "" && ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch ft.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// validJSONName is encoding/json's isValidTag: a json tag name it does
// not ignore.
func validJSONName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return s != ""
}

// applyTags honours the struct tags jsonschema-go does not read, on the
// fields of rt and of the structs they hold (applyNestedTags):
//
//	default:"…"   the property's default (JSON, or the raw text for a string
//	              field); the field becomes optional
//	enum:"a,b"    the allowed values, comma-separated (JSON for non-string fields)
//	minimum:"1"   inclusive numeric bounds
//	maximum:"10"
//
// On a list field (a slice or array, through pointers; not []byte) enum,
// minimum and maximum constrain its elements ("items"), as pydantic
// writes list[Literal["a", "b"]]; default stays on the field. Where the
// constrained schema takes null (a pointer, or a list of pointers), the
// enum takes null too, as pydantic's Optional[Literal[...]] = None does.
// A value that does not parse is an error at registration.
func applyTags(rt reflect.Type, s *jsonschema.Schema) error {
	for _, f := range reflect.VisibleFields(rt) {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" { // left out; `json:"-,"` names a field "-"
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		prop := s.Properties[name]
		if prop == nil {
			continue
		}
		isString := f.Type.Kind() == reflect.String || decodesFromText(derefType(f.Type))
		if def, ok := f.Tag.Lookup("default"); ok {
			v, err := tagValue(def, isString, true)
			if err != nil {
				return fmt.Errorf("toolkit: field %s: default tag: %w", f.Name, err)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			prop.Default = raw
			s.Required = removeString(s.Required, name)
		}
		// What enum, minimum and maximum constrain: the value, or a
		// list's elements.
		target, elem := prop, derefType(f.Type)
		if (elem.Kind() == reflect.Slice && elem.Elem().Kind() != reflect.Uint8 || elem.Kind() == reflect.Array) && prop.Items != nil {
			target, elem = prop.Items, derefType(elem.Elem())
		}
		if enum, ok := f.Tag.Lookup("enum"); ok {
			target.Enum = nil
			for _, item := range strings.Split(enum, ",") {
				v, err := tagValue(item, elem.Kind() == reflect.String || decodesFromText(elem), false)
				if err != nil {
					return fmt.Errorf("toolkit: field %s: enum tag: %w", f.Name, err)
				}
				switch v.(type) {
				case int64, uint64: // tagValue's exact integer beyond ±2^53
					return fmt.Errorf("toolkit: field %s: enum tag: %s is beyond ±2^53, where the input validator cannot compare integers exactly", f.Name, strings.TrimSpace(item))
				}
				target.Enum = append(target.Enum, v)
			}
			if slices.Contains(target.Types, "null") && !slices.Contains(target.Enum, nil) {
				target.Enum = append(target.Enum, nil)
			}
		}
		for tag, dst := range map[string]**float64{"minimum": &target.Minimum, "maximum": &target.Maximum} {
			text, ok := f.Tag.Lookup(tag)
			if !ok {
				continue
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
			if err != nil {
				return fmt.Errorf("toolkit: field %s: %s tag %q is not a number", f.Name, tag, text)
			}
			*dst = &x
		}
		if err := applyNestedTags(f.Type, prop); err != nil {
			return err
		}
	}
	return nil
}

// applyNestedTags applies the tags of a struct that a field holds (itself,
// through pointers, as the elements of a slice or an array, or as the
// values of a map) to that struct's schema within the field's.
// A pointer to a type whose schema takes any value (takesAnyValue)
// keeps that schema.
func applyNestedTags(ft reflect.Type, prop *jsonschema.Schema) error {
	pointer := ft.Kind() == reflect.Pointer
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if pointer && takesAnyValue(ft) {
		// jsonschema-go adds "null" to the types of a pointer's schema:
		// to one of no type (a *json.RawMessage's {}), which takes null
		// already, that leaves nothing but null.
		prop.Types = nil
		return nil
	}
	switch ft.Kind() {
	case reflect.Struct:
		if prop.Properties != nil {
			return applyTags(ft, prop)
		}
	case reflect.Slice, reflect.Array:
		if prop.Items != nil {
			return applyNestedTags(ft.Elem(), prop.Items)
		}
	case reflect.Map:
		if prop.AdditionalProperties != nil {
			return applyNestedTags(ft.Elem(), prop.AdditionalProperties)
		}
	}
	return nil
}

// tagValue parses a tag value: raw text for string fields, JSON otherwise
// (or, when lenient, raw text if it is not JSON).
func tagValue(text string, isString, lenient bool) (any, error) {
	if isString {
		return text, nil
	}
	var v any
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil {
		if lenient {
			return text, nil
		}
		return nil, fmt.Errorf("%q is not a JSON value", text)
	}
	if MayHoldBigIntegers([]byte(text)) { // exact, as the model's arguments are decoded
		v = decodeExact([]byte(text))
	}
	return v, nil
}

// derefType is t without its pointers.
func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// StripTitles removes "title" keys recursively from a JSON schema: from the
// top level and from every nested schema (properties, items,
// additionalProperties, $defs, definitions, anyOf/oneOf/allOf, not). A
// property that is itself named "title" is kept.
func StripTitles(schema map[string]any) {
	delete(schema, "title")
	for _, key := range []string{"properties", "$defs", "definitions", "patternProperties"} {
		if m, ok := schema[key].(map[string]any); ok {
			for _, v := range m {
				if sub, ok := v.(map[string]any); ok {
					StripTitles(sub)
				}
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not", "contains"} {
		if sub, ok := schema[key].(map[string]any); ok {
			StripTitles(sub)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if list, ok := schema[key].([]any); ok {
			for _, v := range list {
				if sub, ok := v.(map[string]any); ok {
					StripTitles(sub)
				}
			}
		}
	}
}
