package toolkit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/big"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolbus/toolbus/internal/schemagraph"
)

// Call runs a tool call and yields its chunks and progress reports as they
// are produced, then exactly one final Response (Event.Final) whose ID is
// the call ID. Errors are data: unknown tool, inactive group, invalid input,
// tool failure, panic, interrupt and timeout all end in a final response
// with the matching State and Code. Call runs the tool on the caller's
// goroutine; stopping the iteration early makes the tool's next Write
// return ErrStopped and yields nothing more. Each range over the sequence
// runs the call anew, its tool and middleware too (where an AgentScope
// generator, once consumed, yields nothing): range it once. A panic in the loop body is
// the caller's: it leaves the tool's Write and reaches the caller as it
// was, not as the tool's panic.
//
// The chain gets a copy of call.Input: a middleware or tool that sets or
// deletes its keys in place leaves the caller's map as it was. The copy
// is shallow: the maps and slices nested in it are the caller's, and one
// that changes them must copy them first.
func (tk *Toolkit) Call(ctx context.Context, call ToolCall) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		w := &yieldWriter{yield: yield}
		resp := tk.dispatch(ctx, call, w, true)
		if !w.stopped {
			yield(Event{Final: resp})
		}
	}
}

// Invoke runs a call and returns only its final response, discarding
// chunks and progress as they are accumulated. Like Call, it runs the tool
// on the caller's goroutine and returns when the tool does: a tool that
// ignores ctx holds Invoke past ctx's deadline, and nothing of the call
// is left running once it returns. A tool or middleware that calls
// runtime.Goexit (t.FailNow) ends the caller's goroutine, since nothing
// can stop a Goexit: the call is never answered, and the toolkit's log
// names the tool. The chain gets a copy of call.Input, as with Call.
func (tk *Toolkit) Invoke(ctx context.Context, call ToolCall) *Response {
	return tk.dispatch(ctx, call, discard{}, true)
}

type discard struct{}

func (discard) Write(Chunk) error       { return nil }
func (discard) Progress(Progress) error { return nil }
func (discard) Log(LogMessage) error    { return nil }

type yieldWriter struct {
	yield   func(Event) bool
	stopped bool
	// inYield is set while the consumer's loop body runs: a panic that
	// leaves yield with it set is the consumer's, and passes through the
	// dispatcher's recovers (consumerPanicked) to the consumer as it was.
	inYield bool
}

func (w *yieldWriter) emit(ev Event) error {
	if w.stopped {
		return ErrStopped
	}
	w.inYield = true
	ok := w.yield(ev)
	w.inYield = false
	if !ok {
		w.stopped = true
		return ErrStopped
	}
	return nil
}

// Ask answers the tool's request with the caller's AskFunc (WithAsker in
// the tool's context), as Ask does, unless the caller stopped iterating:
// then nobody is there to answer.
func (w *yieldWriter) Ask(ctx context.Context, method string, params any) (any, error) {
	if w.stopped {
		return nil, ErrStopped
	}
	if a := AskerFrom(ctx); a != nil {
		return a(ctx, method, params)
	}
	return nil, ErrCannotAsk
}

func (w *yieldWriter) Write(c Chunk) error       { return w.emit(Event{Chunk: &c}) }
func (w *yieldWriter) Log(m LogMessage) error    { return w.emit(Event{Log: &m}) }
func (w *yieldWriter) Progress(p Progress) error { return w.emit(Event{Progress: &p}) }

// Dispatch runs a call, streaming every chunk and progress report to out,
// and returns the final accumulated Response (the transport sends it). It
// is the push form of Call, for transports. Checks run in this order: unknown
// tool (CodeNotFound), inactive group (CodeGroupInactive), input validation
// (CodeInvalidInput), then the middleware chain runs and, innermost, the
// tool with the presets merged into its input. The error chunk of each
// failure is written to out too.
//
// Unlike Call and Invoke, Dispatch hands the chain call.Input itself
// (unless presets or a json.Number made a copy): a middleware or tool
// may set or delete its keys in place, so a transport passes a map of
// its own (one it decoded), which it does not read after.
func (tk *Toolkit) Dispatch(ctx context.Context, call ToolCall, out Writer) *Response {
	return tk.dispatch(ctx, call, out, false)
}

// dispatch is Dispatch; copyInput hands the chain a copy of call.Input
// (Call, Invoke), whose caller may read its map after.
func (tk *Toolkit) dispatch(ctx context.Context, call ToolCall, out Writer, copyInput bool) *Response {
	d := &dispatch{out: out, max: tk.maxResult, copyInput: copyInput}
	d.acc.blocks = d.first[:0]
	d.run(ctx, tk, call)
	tool := d.seal()
	r := d.final(call.ID)
	if !d.ran {
		if rw, ok := out.(RefusalWriter); ok {
			rw.Refused(r)
		} else {
			tk.Refused(ctx, call, r)
		}
	} else if tool&toolEntered != 0 {
		if r.Code != "" { // a call that failed: nothing more on success
			if rw, ok := out.(RanWriter); ok {
				rw.ToolRan()
			}
		}
	} else if tool&toolSkipped != 0 {
		if nw, ok := out.(NotRunWriter); ok {
			nw.ToolNotRun()
		}
	}
	return r
}

// RanWriter is a Writer told (ToolRan, before Dispatch returns the
// final) that the call's tool was entered, when the call did not succeed
// (the final has a Code; a call that succeeded is not told). The code of
// such a final may be one a middleware answers without running the tool
// (CodeApprovalRequired, CodeDenied, with their metadata): a tool can end
// its call with it too, after its effects. A transport that takes such a
// final for a call that never ran (the bus, which lets a call
// that awaited an approval be sent again under its id) tells the two
// apart with it.
//
// It is told also when the tool was entered by an earlier run of the
// chain's rest (a middleware that retries), when a middleware runs the
// tool by its Handler (Call.Tool.Handler) instead of the chain's rest,
// and when a middleware runs the tool with a Call it built anew, unless
// the context it hands on does not derive from its own (see Call).
type RanWriter interface {
	Writer
	ToolRan()
}

// NotRunWriter is a Writer told (ToolNotRun, before Dispatch returns
// the final) that the call's tool was not run: its middleware chain ran,
// but the call's context had ended when the chain reached the tool,
// which was skipped (the final is ContextError's, unless a middleware
// changed it). A transport that may still send the call elsewhere (the
// bus, for a call its stopping worker cancelled) can do so, knowing the
// tool did not start. What the middleware did before the tool (an
// approval used, a rate-limit token taken, a line logged) stays done,
// and is done again wherever the call goes.
//
// It is not told when the tool was entered at all, also by an earlier
// run of the chain's rest (a middleware that retries), or with a Call a
// middleware built anew (see Call).
type NotRunWriter interface {
	Writer
	ToolNotRun()
}

// RefusalWriter is a Writer that takes the answer to a call Dispatch
// refused (its middleware chain did not run) in place of
// Options.OnRefused, for a transport that may still send the call
// elsewhere (the bus, when the tool was removed meanwhile): it reports
// the refusal (Refused) only if it answers the call with it.
type RefusalWriter interface {
	Writer
	Refused(r *Response)
}

// Refused reports a call answered without running its middleware chain
// to Options.OnRefused. Dispatch reports its own (to a RefusalWriter
// out, when it is one); a transport reports
// those it answers without dispatching them (a bad request, an
// overloaded worker, a cancel that came first), so that the hook hears of
// every call a logging middleware does not.
func (tk *Toolkit) Refused(ctx context.Context, call ToolCall, r *Response) {
	if tk.onRefused != nil {
		tk.onRefused(ctx, call, r)
	}
}

type dispatch struct {
	call Call // the handler's: one allocation with the dispatch
	out  Writer
	acc  Accumulator
	// first holds the accumulator's first block: a call whose output
	// is one block (most are) accumulates it without an allocation.
	first [1]accBlock
	code  Code
	meta  map[string]any
	done  bool
	ran   bool // the middleware chain was entered
	// tool is what the chain did with the tool (toolEntered,
	// toolSkipped), told from whatever goroutine the chain runs on,
	// and toolSealed once Dispatch has read it.
	tool atomic.Uint32
	max  int // the bound of the output (Options.MaxResultBytes); ≤ 0, none
	// failed is set when the call failed by its output (past max, or a
	// chunk that could not be merged): what the tool's writes return
	// from then on, taking nothing more.
	failed error
	// parent is the caller's context, under the chain's (callCtx).
	parent context.Context
	// copyInput: the chain gets a copy of the call's Input, whose caller
	// may read it after (Call, Invoke).
	copyInput bool
}

// The bits of dispatch.tool. A middleware may run the chain's rest on
// goroutines of its own, several at once (a hedge), or leave it running
// when it returns (with a writer of its own): the bits are set and read
// atomically, and once Dispatch has read them (seal) the tool is not
// entered for the call any more, so what Dispatch told (RanWriter,
// NotRunWriter) stays true.
const (
	toolEntered uint32 = 1 << iota // the tool was entered (enter)
	toolSkipped                    // the chain reached the tool with the call's context ended, once at least
	toolSealed                     // Dispatch has read the bits
)

// enter records that the tool is entered, unless Dispatch has already
// read what the chain did (seal): false then, and the tool must not run.
func (d *dispatch) enter() bool { return d.tool.Or(toolEntered)&toolSealed == 0 }

// skip records that the chain reached the tool with the call's context
// ended.
func (d *dispatch) skip() { d.tool.Or(toolSkipped) }

// seal returns what the chain did with the tool and ends its entries:
// the chain has returned, and the call is answered by what it did so far.
func (d *dispatch) seal() uint32 { return d.tool.Or(toolSealed) }

// callCtx is the context a call's middleware chain gets: the caller's
// (its dispatch's parent), carrying the dispatch, which unlessEnded tells
// whether the tool was entered (RanWriter, NotRunWriter). Call carries
// it too, but a middleware may hand the tool a Call it built anew; the
// context it hands on derives from the one it was given (or it would
// lose the call's cancellation), and still carries it. The dispatch is
// the context, as another type: the chain's context costs no
// allocation, and neither is the other's interface.
type callCtx dispatch

// dispatchKey is callCtx's key for its dispatch.
type dispatchKey struct{}

func (c *callCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *callCtx) Done() <-chan struct{}       { return c.parent.Done() }
func (c *callCtx) Err() error                  { return c.parent.Err() }

// String names the context as the context package's do (not the
// dispatch's fields, the call's input among them).
func (c *callCtx) String() string { return fmt.Sprint(c.parent) + ".WithValue(toolkit.dispatchKey)" }

func (c *callCtx) Value(key any) any {
	if key == (dispatchKey{}) {
		return (*dispatch)(c)
	}
	return c.parent.Value(key)
}

// dispatchOf is the dispatch running call, with ctx: call's, or, for a
// Call a middleware built anew, ctx's; nil for neither (a handler called
// outside Dispatch).
func dispatchOf(ctx context.Context, call *Call) *dispatch {
	if call.d != nil {
		return call.d
	}
	d, _ := ctx.Value(dispatchKey{}).(*dispatch)
	return d
}

// refuse returns the error a write of c gets without c being taken: the
// call's failure by its output, or ErrOutputTooLarge when c takes the
// output past its bound, which fails the call.
func (d *dispatch) refuse(c *Chunk) error {
	switch {
	case d.failed != nil:
		return d.failed
	case d.max <= 0 || d.acc.HeldWith(c) <= d.max:
		return nil
	}
	d.failed = ErrOutputTooLarge
	d.fail(CodeToolError, fmt.Sprintf("ToolOutputTooLargeError: the tool's output passed the limit of %d bytes one call may return; the rest of it was dropped.", d.max))
	return d.failed
}

// unmergeable fails the call for a chunk the accumulator could not merge
// (Accumulator.Add's error), after that chunk: as AgentScope 2.x's
// append_chunk error ends its call, nothing the tool writes after it is
// taken, and the error chunk ends the output.
func (d *dispatch) unmergeable(err error) error {
	d.failed = &Error{Code: CodeToolError, Message: err.Error(), cause: fmt.Errorf("%w: %w", ErrUnmergeable, err)}
	d.fail(CodeToolError, err.Error())
	return d.failed
}

func (d *dispatch) Write(c Chunk) error {
	if d.done {
		return ErrStopped
	}
	if err := d.refuse(&c); err != nil {
		return err
	}
	// Accumulate before forwarding: the accumulator copies what it keeps,
	// so a consumer that changes the chunk it is handed cannot change the
	// final response.
	aerr := d.acc.Add(&c)
	err := d.out.Write(c)
	if aerr != nil {
		return cmp.Or(err, d.unmergeable(aerr))
	}
	return err
}

func (d *dispatch) Log(m LogMessage) error {
	if d.done {
		return ErrStopped
	}
	return Log(d.out, m) // checks the level
}

func (d *dispatch) Ask(ctx context.Context, method string, params any) (any, error) {
	if d.done {
		return nil, ErrStopped
	}
	return Ask(ctx, d.out, method, params)
}

func (d *dispatch) Progress(p Progress) error {
	if d.done {
		return ErrStopped
	}
	return d.out.Progress(p)
}

// fail ends the call with code and a message chunk for the model.
func (d *dispatch) fail(code Code, msg string) {
	d.code = code
	c := Chunk{Content: []Block{{Type: BlockText, Text: msg}}, State: code.State()}
	_ = d.acc.Add(&c) // first, as Write does: a consumer that changes the chunk cannot change the final
	_ = d.out.Write(c)
}

// ResultWriter is a Writer that takes a function tool's result (Func's),
// its one and last output, apart from other chunks: the chunk is the
// tool's own, nothing changes it afterwards, so it need not be copied;
// and a transport whose final carries the content while nothing was
// streamed (the bus) need not schedule the chunk's sending. It is still
// a chunk in order: whatever makes the transport stream after it sends
// it first.
type ResultWriter interface {
	Writer
	WriteResult(c Chunk) error
}

// writeResult writes a function tool's result.
func writeResult(w Writer, c Chunk) error {
	d, ok := w.(*dispatch)
	if !ok {
		return w.Write(c)
	}
	rw, ok := d.out.(ResultWriter)
	if !ok {
		return d.Write(c)
	}
	if d.done {
		return ErrStopped
	}
	if err := d.refuse(&c); err != nil {
		return err
	}
	aerr := d.acc.Add(&c)
	err := rw.WriteResult(c)
	if aerr != nil {
		return cmp.Or(err, d.unmergeable(aerr))
	}
	return err
}

// Delivered is a Writer that may have passed a call's whole content on
// to its consumer already (a transport that streamed it): when
// ContentDelivered reports so at the end of the call, Dispatch returns the
// final without content (state, code and metadata only) instead of
// building the accumulated content nobody reads.
type Delivered interface {
	Writer
	ContentDelivered() bool
}

func (d *dispatch) final(id string) *Response {
	d.done = true
	var r *Response
	if dw, ok := d.out.(Delivered); ok && dw.ContentDelivered() {
		r = d.acc.ResponseWithoutContent(id)
	} else {
		r = d.acc.Response(id)
	}
	r.Code = d.code
	if r.Code == "" {
		r.Code = StateCode(r.State)
	}
	if len(d.meta) > 0 {
		if r.Metadata == nil {
			r.Metadata = map[string]any{}
		}
		maps.Copy(r.Metadata, d.meta)
	}
	return r
}

func (d *dispatch) run(ctx context.Context, tk *Toolkit, tc ToolCall) {
	// The prelude (group state, validation) runs under a recover too: a
	// GroupState or validator that panics ends the call, not the process;
	// so does what reads the chain's error (an Error method that panics).
	defer func() {
		if v := recover(); v != nil {
			if d.consumerPanicked() {
				panic(v)
			}
			p, stack := PanicText(v), debug.Stack()
			what := "toolkit: a call panicked before its tool ran"
			if d.ran {
				what = "toolkit: a call panicked after its tool returned: the error it returned panicked when read, or the writer did"
			}
			tk.log.Error(what, "tool", tc.Name, "call", tc.ID, "panic", p, "stack", string(stack))
			recordPanic(ctx, v, p, stack)
			d.fail(CodeInternal, fmt.Sprintf("InternalError: the call to '%s' failed unexpectedly (panic: %s).", tc.Name, p))
		}
	}()
	e, ctx, ok := d.prelude(ctx, tk, &tc)
	if !ok {
		return
	}
	d.ran = true
	d.parent = ctx
	err := d.invoke((*callCtx)(d), tk, e.handler, &d.call)
	if err == nil || d.failed != nil {
		return // the call failed when its output did
	}
	f := Failure(ctx, err)
	if f.RetryAfter > 0 {
		d.setMeta(MetaRetryAfterMS, f.RetryAfter.Milliseconds())
	}
	msg, meta := f.Message, f.Metadata
	if d.max > 0 { // the tool's words (a command's whole output, say) within the bound
		msg, meta = boundError(msg, meta, d.max-d.acc.Size()-keptPerBlock-(&Block{}).Size(), d.max)
	}
	for k, v := range meta {
		d.setMeta(k, v)
	}
	d.fail(f.Code, msg)
}

// boundError is an error's message and metadata within room bytes, the
// message (cut to a KiB at least) before the entries, and a note naming
// the entries dropped counted with them: first the note as the entries
// that fit without it make it, then that one's length kept for it, then
// the longest a note of meta's can be, which always holds. limit is the
// bound the note names.
func boundError(msg string, meta map[string]any, room, limit int) (string, map[string]any) {
	reserve := 0
	for try := 0; ; try++ {
		m := cutMessage(msg, max(room-reserve, minErrorMessage))
		kept, dropped := boundMeta(meta, room-reserve-len(m))
		if dropped == "" {
			return m, kept
		}
		note := metaNote(dropped, limit)
		if len(note) <= reserve || try == 2 {
			return m + note, kept
		}
		reserve = len(note)
		if try == 1 {
			reserve = len(metaNote(strings.Repeat("x", 3*maxNamed+2*len(", "))+fmt.Sprintf(" and %d more", len(meta)), limit))
		}
	}
}

// metaNote is what an error's message says of its metadata entries
// dropped, named as boundMeta names them.
func metaNote(dropped string, limit int) string {
	return fmt.Sprintf(" (the error's metadata %s dropped: past the limit of %d bytes one call may return)", dropped, limit)
}

// maxNamed is the longest a key is named in metaNote: %.64q of 64
// characters each written \U0010ffff at most.
const maxNamed = 2 + 64*len(`\U0010ffff`)

// boundMeta is the entries of an error's metadata that fit in room bytes
// (counted as Chunk.MetaSize counts them), taken in key order, and the
// keys of those left out, named (the first few) for the message; meta
// itself when it all fits.
func boundMeta(meta map[string]any, room int) (map[string]any, string) {
	total := 0
	for k, v := range meta {
		total += metaEntrySize(k, v)
	}
	if total <= room {
		return meta, ""
	}
	kept := map[string]any{}
	var dropped []string
	n := 0
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		if size := metaEntrySize(k, meta[k]); size <= room {
			kept[k], room = meta[k], room-size
			continue
		}
		if n++; len(dropped) < 3 {
			dropped = append(dropped, fmt.Sprintf("%.64q", k))
		}
	}
	names := strings.Join(dropped, ", ")
	if n > len(dropped) {
		names += fmt.Sprintf(" and %d more", n-len(dropped))
	}
	return kept, names
}

// minErrorMessage is how much of a failed call's message is kept, when
// its output has filled Options.MaxResultBytes already.
const minErrorMessage = 1024

// cutMessage cuts msg to at most n bytes, at a character's start, with a
// note of how much was cut counted in them (past n only when n is
// shorter than the note).
func cutMessage(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	// The note at its longest: fewer bytes than the whole are cut.
	cut := max(n-len(fmt.Sprintf("… (%d more bytes of the message cut)", len(msg))), 0)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes of the message cut)", msg[:cut], len(msg)-cut)
}

// prelude finds the call's tool and checks the call (its group active,
// its input valid), filling d.call; false when it failed the call. A
// function of its own, not inlined: its locals are gone from the stack
// while the tool runs, which keeps a waiting call's goroutine small (a
// call in flight holds its stack).
//
//go:noinline
func (d *dispatch) prelude(ctx context.Context, tk *Toolkit, tc *ToolCall) (*entry, context.Context, bool) {
	reg := tk.reg.Load()
	e := reg.lookup(tc.Name)
	if e == nil {
		e := NotFound(tc.Name)
		d.fail(e.Code, e.Message)
		return nil, ctx, false
	}
	if g := e.tool.group; g != BasicGroup {
		active, _, err := tk.ActiveGroups(ctx, tc.Scope(), tc.GroupsRevision)
		if errors.Is(err, ErrInvalidSession) {
			d.fail(CodeInvalidInput, fmt.Sprintf("BadRequestError: %v", err))
			return nil, ctx, false
		}
		if err != nil {
			d.fail(CodeUnavailable, fmt.Sprintf("GroupStateError: could not read the active tool groups: %v", err))
			return nil, ctx, false
		}
		if !slices.Contains(active, g) {
			d.fail(CodeGroupInactive, fmt.Sprintf("ToolGroupInactiveError: The tool '%s' in group '%s' is currently inactive. You should first activate the group by calling the '%s' tool.", tc.Name, g, MetaToolName))
			return nil, ctx, false
		}
	}
	input, own := tc.Input, !d.copyInput // own: the chain may change it in place
	if tc.RawInput != "" {
		if tc.Input != nil {
			d.fail(CodeInvalidInput, "BadRequestError: the call has both input and raw_input; send one of them.")
			return nil, ctx, false
		}
		in, err := ParseRawInput(tc.RawInput)
		if err != nil {
			d.fail(CodeInvalidInput, err.Error())
			return nil, ctx, false
		}
		input, own = in, true
	} else if in, changed, err := inputNumbers(input); err != nil {
		// A json.Number is the number it spells (a caller's decoder
		// with UseNumber): validated and converted as that number.
		d.fail(CodeInvalidInput, fmt.Sprintf("Input validation failed for tool '%s': %v", tc.Name, err))
		return nil, ctx, false
	} else {
		input, own = in, own || changed
	}
	if len(e.tool.presets) > 0 {
		input = maps.Clone(input)
		if input == nil {
			input = make(map[string]any, len(e.tool.presets))
		}
		for k := range e.tool.presets {
			delete(input, k) // hidden from the model: never validated, never trusted
		}
	} else if !own && input != nil {
		input = maps.Clone(input) // the caller's map stays as it was
	}
	if e.validator != nil && (e.quick == nil || !e.quick.accepts(input)) {
		var inst any = input
		if input == nil {
			inst = map[string]any{}
		}
		if e.costly != nil && e.costly.Cost(inst, maxValidationCost) > maxValidationCost {
			d.fail(CodeInvalidInput, tooComplex(tc.Name))
			return nil, ctx, false
		}
		if err := e.validator.Validate(inst); err != nil {
			d.fail(CodeInvalidInput, fmt.Sprintf("Input validation failed for tool '%s': %s", tc.Name, validationMessage(err)))
			return nil, ctx, false
		}
	}
	// Field by field: a Call literal is built on the stack first.
	d.call.ToolCall, d.call.Tool, d.call.d = *tc, e.tool, d
	d.call.Input = input
	if e.extension != nil {
		ctx = withExtended(ctx, e.extension, input)
	}
	return e, ctx, true
}

func (d *dispatch) setMeta(k string, v any) {
	if d.meta == nil {
		d.meta = map[string]any{}
	}
	d.meta[k] = v
}

// invoke runs the handler chain, turning a panic into CodeInternal. A
// runtime.Goexit in the chain cannot be stopped: it ends the caller's
// goroutine with the call unanswered, and is logged as an error.
func (d *dispatch) invoke(ctx context.Context, tk *Toolkit, h Handler, call *Call) (err error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover()
		if v == nil { // a Goexit: panic(nil) is a *runtime.PanicNilError
			if d.consumerPanicked() {
				return // in Call's loop body (t.FailNow there): the consumer's
			}
			tk.log.Error("toolkit: the tool or a middleware called runtime.Goexit, which ends the goroutine that called the toolkit, leaving the call unanswered", "tool", call.Name, "call", call.ID, "stack", string(debug.Stack()))
			return
		}
		if d.consumerPanicked() {
			panic(v)
		}
		p, stack := PanicText(v), debug.Stack()
		tk.log.Error("toolkit: tool panicked", "tool", call.Name, "call", call.ID, "panic", p, "stack", string(stack))
		recordPanic(ctx, v, p, stack)
		err = NewError(CodeInternal, fmt.Sprintf("InternalError: the tool '%s' failed unexpectedly (panic: %s).", call.Name, p))
	}()
	err = h(ctx, call, d)
	returned = true
	return err
}

// PanicText describes a panic's value for the model and the log. A value
// that may hold others (a map, slice, array, struct, pointer) is named by
// its type only: fmt prints a map or slice that holds itself until the
// stack overflows, a crash no recover catches. fmt catches a panicking
// Error or String method.
func PanicText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case error, fmt.Stringer:
		return fmt.Sprint(x)
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Interface:
		return fmt.Sprintf("a value of type %T", v)
	}
	return fmt.Sprint(v)
}

// consumerPanicked reports whether the panic being recovered came from
// Call's consumer (its loop body, run inside the tool's Write): it is not
// the tool's, and goes on to the consumer.
func (d *dispatch) consumerPanicked() bool {
	w, ok := d.out.(*yieldWriter)
	return ok && w.inYield
}

// validationMessage shortens jsonschema's error for the model.
func validationMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "validating root: ")
	// The validator prints the offending value whole: an input built to
	// hurt would come back twice its size. Keep what the model can use.
	msg = cutMessage(msg, maxValidationMessage)
	// A number of the wrong type is printed as Go's %v prints a float,
	// from a million up in exponent form ("type: 3e+09 has type
	// "integer""): write it as JSON does.
	msg = typeRE.ReplaceAllStringFunc(msg, func(m string) string {
		sub := typeRE.FindStringSubmatch(m)
		f, err := strconv.ParseFloat(sub[1], 64)
		if err != nil {
			return m
		}
		return "type: " + jsonFloat(f) + sub[2]
	})
	// jsonschema-go prints the number as a fraction and the bound with six
	// decimals ("1000/1 is greater than 100.000000"); say "1000 is greater
	// than 100", both as JSON writes them (3000000000, not 3e+09), and an
	// integer float64 cannot hold exactly whole.
	return boundRE.ReplaceAllStringFunc(msg, func(m string) string {
		sub := boundRE.FindStringSubmatch(m)
		n, ok := new(big.Rat).SetString(sub[2])
		bound, err := strconv.ParseFloat(sub[4], 64)
		if !ok || err != nil {
			return m
		}
		num := n.Num().String() // an integer beyond float64's exact range, as sent
		if f, exact := n.Float64(); exact || !n.IsInt() {
			num = jsonFloat(f)
		}
		return sub[1] + ": " + num + " " + sub[3] + " " + jsonFloat(bound)
	})
}

// jsonFloat writes f as encoding/json does: digits without an exponent
// from 1e-6 up to 1e21, so a whole number reads as the integer it is.
func jsonFloat(f float64) string {
	if b, err := json.Marshal(f); err == nil {
		return string(b)
	}
	return strconv.FormatFloat(f, 'g', -1, 64) // NaN or ±Inf, which JSON has not
}

// maxValidationMessage bounds the validator's message in a final.
const maxValidationMessage = 1024

var typeRE = regexp.MustCompile(`type: (-?\d+(?:\.\d+)?e[+-]\d+)( has type "(?:integer|number)")`)

var boundRE = regexp.MustCompile(`(multipleOf|minimum|maximum|exclusiveMinimum|exclusiveMaximum): (-?\d+/\d+) (is [a-z ]+?) (-?\d+\.\d+)`)

// compileSchema resolves a JSON-shaped schema for validation, and returns
// its graph when each input's cost must be counted before it is validated
// (maxValidationCost). A schema with references is refused when the
// validator would follow them for ever or past bound on one value
// (schemagraph.Check): the first call would overflow the stack, a fatal
// error no recover catches, or hold a core past any deadline. Without
// references a schema is a tree, and is not walked again.
func compileSchema(schema map[string]any) (*jsonschema.Resolved, *schemagraph.Graph, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid input schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("invalid input schema: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid input schema: %w", err)
	}
	if !bytes.Contains(b, []byte(`"$ref"`)) && !bytes.Contains(b, []byte(`"$dynamicRef"`)) {
		return r, nil, nil
	}
	var m map[string]any // as the validator read it: the JSON, not the Go values
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("invalid input schema: %w", err)
	}
	g, err := schemagraph.Check(m)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid input schema: %w", err)
	}
	if p := g.Paths(maxSchemaPaths); p <= maxSchemaPaths && p <= max(pathsPerSubschema*g.Size(), fewSchemaPaths) {
		return r, nil, nil
	}
	return r, g, nil
}

// A schema recursive through a descent (a tree of nodes, an expression of
// and/or/not) may cost more to validate for one input than for another
// of its size: one whose branches descend alike (an anyOf of two object
// schemas that both take "x" as the schema itself) applies itself once
// per path, ~2^n times for an input n levels deep, and the validator
// cannot be stopped. So for such a schema, or one of more than
// maxSchemaPaths paths, each input's cost is counted first
// (schemagraph.Graph.Cost: a walk that stops at the budget and counts
// once a pair of subschema and value that costs much, so it is short
// for an input built to cost 2^40, and a small part of the validation's
// time for an input it lets through), and an input costing more than
// maxValidationCost is refused as too complex for its schema. So is one
// whose references multiply its paths far past its size (a chain of
// anyOf of two references to the next link: 2^n paths for n links),
// since each value of an input costs its paths: an array of 10,000
// numbers cost 80 million applications under a schema of 8,000 paths
// and 40 subschemas. Other schemas apply to a value at most
// pathsPerSubschema times as many subschemas as they hold (or
// fewSchemaPaths), as one without references pathsPerSubschema times
// its size would, and their calls never walk: definitions shared by a
// few properties (pydantic's submodels, Optional or not) multiply the
// paths by two or three, and counting their inputs would refuse a flat
// input of 1 MiB (500,000 numbers in an array) that the same schema
// written out without references takes. BenchmarkCost (package
// schemagraph) measures the walk.
const (
	maxSchemaPaths    = 10_000
	fewSchemaPaths    = 64
	pathsPerSubschema = 8
	maxValidationCost = 1_000_000
)

// tooComplex is the message for an input whose validation would cost
// more than maxValidationCost.
func tooComplex(tool string) string {
	return fmt.Sprintf("InputTooComplexError: the input for tool '%s' is nested too deeply or too intricately for its schema to be checked (it would take more than %d steps); send a shallower input.", tool, maxValidationCost)
}

type extendedKey struct{}

// withExtended gives the handler the values of the extension's fields.
func withExtended(ctx context.Context, ext *extension, input map[string]any) context.Context {
	vals := make(map[string]any, len(ext.properties))
	for k := range ext.properties {
		if v, ok := input[k]; ok {
			vals[k] = v
		}
	}
	return context.WithValue(ctx, extendedKey{}, vals)
}

// Extended returns the call's values of the fields Toolkit.Extend added to
// its tool's schema (the "thinking" a model filled in, say), keyed by
// property name; nil when the tool is not extended. Typed tools (Func,
// Stream) read them here: their input struct does not have them. Raw
// handlers and middleware also find them in call.Input.
func Extended(ctx context.Context) map[string]any {
	m, _ := ctx.Value(extendedKey{}).(map[string]any)
	return m
}
