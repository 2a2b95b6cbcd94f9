package bus

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/toolbus/toolbus/toolkit"
)

// ClientOptions configure a Client. A nil *ClientOptions means the
// defaults; so does every zero field.
type ClientOptions struct {
	// Heartbeat is the interval at which the client asks workers to send a
	// heartbeat when a call is otherwise silent. Default DefaultHeartbeat.
	Heartbeat time.Duration
	// StallTimeout ends a call as worker_lost (and publishes its cancel)
	// when no frame arrived for that long. Default 3 × Heartbeat.
	StallTimeout time.Duration
	// CancelGrace is how long a call whose ctx ended waits for the
	// worker's final (interrupted or timeout, with the partial output)
	// before the client makes one up. Default StallTimeout.
	CancelGrace time.Duration
	// Logger receives lost frames and undecodable frames. Default
	// slog.Default().
	Logger *slog.Logger
}

func (o *ClientOptions) withDefaults() ClientOptions {
	var r ClientOptions
	if o != nil {
		r = *o
	}
	if r.Heartbeat <= 0 {
		r.Heartbeat = DefaultHeartbeat
	}
	r.Heartbeat = min(max(r.Heartbeat, MinHeartbeat), MaxHeartbeat)
	if r.StallTimeout <= 0 {
		r.StallTimeout = 3 * r.Heartbeat
	}
	if r.CancelGrace <= 0 {
		r.CancelGrace = r.StallTimeout
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r
}

// Client calls tools over NATS. It receives every call's frames on one
// wildcard inbox subscription and routes them to the calls by the last
// subject token. A Client is safe for concurrent use; one per connection
// is enough.
type Client struct {
	nc     *nats.Conn
	opts   ClientOptions
	log    *slog.Logger
	prefix string // inbox prefix, ending in "."
	sub    *nats.Subscription
	hbHdr  string
	next   atomic.Uint64

	mu      sync.Mutex
	pending map[string]*inbox
	revs    map[string]uint64 // session → latest groups revision seen
	closed  bool
}

// inbox queues the messages of one call without bounds, so the shared
// subscription callback never blocks on a slow consumer.
type inbox struct {
	mu     sync.Mutex
	msgs   []*nats.Msg
	closed bool
	signal chan struct{}
}

func (b *inbox) push(m *nats.Msg) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

func (b *inbox) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs) > 0
}

func (b *inbox) take(buf []*nats.Msg) ([]*nats.Msg, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	buf = append(buf[:0], b.msgs...)
	clear(b.msgs)
	b.msgs = b.msgs[:0]
	return buf, b.closed
}

// NewClient subscribes the client's inbox on nc. Close releases it.
func NewClient(nc *nats.Conn, opts *ClientOptions) (*Client, error) {
	if nc == nil {
		return nil, errors.New("bus: NewClient needs a connection")
	}
	o := opts.withDefaults()
	c := &Client{
		nc: nc, opts: o, log: o.Logger,
		prefix:  nc.NewInbox() + ".",
		pending: map[string]*inbox{},
		revs:    map[string]uint64{},
	}
	sub, err := nc.Subscribe(c.prefix+"*", c.onMsg)
	if err != nil {
		return nil, fmt.Errorf("bus: subscribing the client inbox: %w", err)
	}
	// Calls may stream many frames; the per-call queues bound nothing, so
	// neither does the subscription.
	sub.SetPendingLimits(-1, -1)
	c.sub = sub
	if o.Heartbeat != DefaultHeartbeat { // the worker's default needs no header
		c.hbHdr = strconv.FormatInt(o.Heartbeat.Milliseconds(), 10)
	}
	return c, nil
}

// Close unsubscribes the inbox; calls still running end with code
// unavailable.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	boxes := c.pending
	c.pending = map[string]*inbox{}
	c.mu.Unlock()
	for _, b := range boxes {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		select {
		case b.signal <- struct{}{}:
		default:
		}
	}
	return c.sub.Unsubscribe()
}

func (c *Client) onMsg(m *nats.Msg) {
	token := m.Subject[len(c.prefix):]
	c.mu.Lock()
	b := c.pending[token]
	c.mu.Unlock()
	if b != nil {
		b.push(m)
	}
}

// Cancel asks the fleet to cancel a call. The call's iterator then ends
// with the worker's interrupted final. Cancelling an unknown or finished
// call is harmless.
func (c *Client) Cancel(callID string) error {
	return c.cancel(callID, "")
}

func (c *Client) cancel(callID, reason string) error {
	if !validCallID(callID) {
		return fmt.Errorf("bus: invalid call id %q", callID)
	}
	return c.nc.Publish(SubjectCancelPrefix+callID, []byte(reason))
}

// Revision returns the latest groups revision the client has seen for a
// session (from reset_tools finals), sent with the session's calls.
func (c *Client) Revision(session string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revs[session]
}

// Invoke runs a call and returns only its final response.
func (c *Client) Invoke(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	var final *toolkit.Response
	for ev := range c.Call(ctx, call) {
		final = ev.Final
	}
	return final
}

// Call publishes a call and yields its chunks and progress reports as they
// arrive, then exactly one final Response (Event.Final) whose ID is the
// call ID; an empty call.ID is filled with a unique one. Every way a call
// can go wrong ends in that final, never in a Go error:
//
//   - no worker serves the tool: unavailable at once (not_found when
//     workers are up but none has the tool);
//   - the request is over the server's max_payload: invalid_input;
//   - no frame for StallTimeout: worker_lost, and a cancel is published;
//   - ctx is cancelled or its deadline passes: a cancel is published and
//     the worker's interrupted or timeout final is awaited for CancelGrace.
//
// A fast call yields only the final. Chunk frames that never arrived are
// counted in the final's metadata (MetaLostChunks) and logged. Stopping
// the iteration early cancels the call.
func (c *Client) Call(ctx context.Context, call toolkit.ToolCall) iter.Seq[toolkit.Event] {
	return func(yield func(toolkit.Event) bool) {
		if call.ID == "" {
			call.ID = nuid.Next()
		}
		final := c.run(ctx, call, yield)
		if final != nil {
			c.noteRevision(call, final)
			yield(toolkit.Event{Final: final})
		}
	}
}

func localFinal(id string, code toolkit.Code, msg string) *toolkit.Response {
	return &toolkit.Response{ID: id, State: code.State(), Code: code,
		Content: []toolkit.Block{{Type: toolkit.BlockText, Text: msg}}}
}

// run does the call; it returns the final to yield, or nil when the
// consumer stopped the iteration.
func (c *Client) run(ctx context.Context, call toolkit.ToolCall, yield func(toolkit.Event) bool) *toolkit.Response {
	if !validCallID(call.ID) {
		return localFinal(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the call id %q is invalid: it must be 1-%d characters of [A-Za-z0-9_-].", call.ID, MaxCallIDLen))
	}
	if !validToken(call.Name) {
		return localFinal(call.ID, toolkit.CodeNotFound, fmt.Sprintf("ToolNotFoundError: The tool named '%s' doesn't exist.", call.Name))
	}
	if err := ctx.Err(); err != nil {
		return c.ctxFinal(ctx, call.ID, nil)
	}
	data, err := msgpackCodec.marshal(&Request{ID: call.ID, Input: call.Input, Session: call.Session})
	if err != nil {
		return localFinal(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the input cannot be encoded: %v", err))
	}
	// Headers only when they say something: a request without any is a
	// plain PUB, cheaper for the client, the server and the worker.
	var hdr nats.Header
	if c.hbHdr != "" {
		hdr = nats.Header{HeaderHeartbeat: {c.hbHdr}}
	}
	if rev := max(call.GroupsRevision, c.Revision(call.Session)); rev > 0 {
		hdr = setHeader(hdr, HeaderGroupsRevision, strconv.FormatUint(rev, 10))
	}
	if dl, ok := ctx.Deadline(); ok {
		ms := int64(math.Ceil(float64(time.Until(dl)) / float64(time.Millisecond)))
		hdr = setHeader(hdr, HeaderTimeout, strconv.FormatInt(max(ms, 0), 10))
	}

	token := strconv.FormatUint(c.next.Add(1), 36)
	box := &inbox{signal: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return localFinal(call.ID, toolkit.CodeUnavailable, "ToolUnavailableError: the client is closed.")
	}
	c.pending[token] = box
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, token)
		c.mu.Unlock()
	}()

	msg := &nats.Msg{Subject: SubjectCallPrefix + call.Name, Reply: c.prefix + token, Header: hdr, Data: data}
	if err := c.nc.PublishMsg(msg); err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return localFinal(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf(
				"RequestTooLargeError: the call's request is %d bytes, over the server's max_payload of %d bytes; send less input.",
				len(data)+headerSize(hdr), c.nc.MaxPayload()))
		}
		return localFinal(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: the call could not be sent: %v", err))
	}

	st := callState{id: call.ID}
	// Frames do not re-arm the stall timer (a timer update per frame is
	// costly); when it fires it checks how long the call has been silent.
	stall := time.NewTimer(c.opts.StallTimeout)
	defer stall.Stop()
	lastFrame := time.Now()
	ctxDone := ctx.Done()
	cancelled := false
	var buf []*nats.Msg
	for {
		select {
		case <-box.signal:
			var closed bool
			buf, closed = box.take(buf)
			for _, m := range buf {
				if isNoResponders(m) {
					return c.noResponders(ctx, call)
				}
				f, err := decodeFrame(m.Data, requestCodec(m) == jsonCodec, true)
				if err != nil {
					c.log.Warn("toolbus: dropping an undecodable frame", "call", call.ID, "err", err)
					continue
				}
				if f.Seq <= st.last {
					continue // a duplicate or an old frame
				}
				if f.Seq != st.last+1 {
					c.log.Warn("toolbus: frames lost", "call", call.ID, "missing", f.Seq-st.last-1)
				}
				st.last = f.Seq
				lastFrame = time.Now()
				switch f.Kind {
				case KindChunk:
					st.chunks++
					st.acc.Add(f.Chunk)
					if !yield(toolkit.Event{Chunk: f.Chunk}) {
						c.cancel(call.ID, "")
						return nil
					}
				case KindProgress:
					if !yield(toolkit.Event{Progress: f.Progress}) {
						c.cancel(call.ID, "")
						return nil
					}
				case KindFinal:
					return st.final(c, f)
				}
			}
			if closed {
				return st.partial(toolkit.CodeUnavailable, "ToolUnavailableError: the client was closed during the call.")
			}
		case <-stall.C:
			if cancelled {
				return c.ctxFinal(ctx, call.ID, &st)
			}
			if silent := time.Since(lastFrame); silent < c.opts.StallTimeout || box.waiting() {
				// Not silent: frames came, or are queued while the caller
				// was slow to take the last event.
				stall.Reset(max(c.opts.StallTimeout-silent, time.Millisecond))
				continue
			}
			c.cancel(call.ID, "")
			return st.partial(toolkit.CodeWorkerLost, fmt.Sprintf(
				"WorkerLostError: the worker running '%s' went silent for %s and is presumed lost; the call was cancelled. It may or may not have taken effect.",
				call.Name, c.opts.StallTimeout))
		case <-ctxDone:
			ctxDone = nil
			cancelled = true
			reason := ""
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				reason = CancelReasonDeadline
			}
			c.cancel(call.ID, reason)
			stall.Reset(c.opts.CancelGrace)
		}
	}
}

// callState is what the client has received of one call.
type callState struct {
	id     string
	last   uint64
	chunks uint64
	acc    toolkit.Accumulator
}

// final turns a final frame into the response: the frame's content when
// nothing was streamed, the accumulated chunks otherwise.
func (st *callState) final(c *Client, f *Frame) *toolkit.Response {
	r := f.Final
	r.ID = st.id
	if f.Chunks == 0 {
		return r // the final's content is the whole result
	}
	built := st.acc.Response(st.id)
	built.State, built.Code = r.State, r.Code
	built.Metadata = r.Metadata
	if f.Chunks > st.chunks {
		lost := f.Chunks - st.chunks
		c.log.Warn("toolbus: chunks lost; the result is incomplete", "call", st.id, "lost", lost)
		if built.Metadata == nil {
			built.Metadata = map[string]any{}
		}
		built.Metadata[MetaLostChunks] = lost
	}
	return built
}

// partial ends the call on the client side, keeping the output so far.
func (st *callState) partial(code toolkit.Code, msg string) *toolkit.Response {
	c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: msg}}, State: code.State()}
	st.acc.Add(&c)
	r := st.acc.Response(st.id)
	r.Code = code
	return r
}

// ctxFinal is the final of a call whose ctx ended and whose worker did not
// answer the cancel in time.
func (c *Client) ctxFinal(ctx context.Context, id string, st *callState) *toolkit.Response {
	if st == nil {
		st = &callState{id: id}
	}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return st.partial(toolkit.CodeTimeout, "TimeoutError: The tool call exceeded its deadline and was stopped.")
	}
	return st.partial(toolkit.CodeInterrupted, toolkit.InterruptedText)
}

func setHeader(h nats.Header, k, v string) nats.Header {
	if h == nil {
		h = nats.Header{}
	}
	h[k] = []string{v}
	return h
}

func isNoResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header != nil && m.Header.Get("Status") == "503"
}

// noResponders tells a tool nobody has (not_found) from a fleet that is
// down (unavailable), asking SubjectList.
func (c *Client) noResponders(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	reply, err := c.List(lctx, "")
	if err == nil && !slices.Contains(reply.Tools, call.Name) {
		return localFinal(call.ID, toolkit.CodeNotFound, fmt.Sprintf("ToolNotFoundError: The tool named '%s' doesn't exist.", call.Name))
	}
	return localFinal(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: no worker serves the tool '%s' right now; retry later.", call.Name))
}

// noteRevision remembers the groups revision a reset_tools call returned.
func (c *Client) noteRevision(call toolkit.ToolCall, r *toolkit.Response) {
	if call.Name != toolkit.MetaToolName || r.State != toolkit.StateSuccess {
		return
	}
	rev, ok := asUint64(r.Metadata[toolkit.MetaGroupsRevision])
	if !ok {
		return
	}
	c.mu.Lock()
	c.revs[call.Session] = max(c.revs[call.Session], rev)
	c.mu.Unlock()
}

// asUint64 reads a number decoded from msgpack or JSON.
func asUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	case float64:
		return uint64(x), x >= 0 && x == math.Trunc(x)
	case int:
		return uint64(x), x >= 0
	case uint32:
		return uint64(x), true
	case int32:
		return uint64(x), x >= 0
	case uint8:
		return uint64(x), true
	case int8:
		return uint64(x), x >= 0
	case uint16:
		return uint64(x), true
	case int16:
		return uint64(x), x >= 0
	}
	return 0, false
}

func headerSize(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// List asks one worker (SubjectList) for its tools and the schemas the
// session may see now, honouring the session's latest groups revision.
func (c *Client) List(ctx context.Context, session string) (*ListReply, error) {
	data, err := msgpackCodec.marshal(&ListRequest{Session: session})
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: SubjectList, Header: nats.Header{HeaderVersion: {WireVersion}}, Data: data}
	if rev := c.Revision(session); rev > 0 {
		msg.Header.Set(HeaderGroupsRevision, strconv.FormatUint(rev, 10))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	m, err := c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("bus: listing tools: %w", err)
	}
	var reply ListReply
	if err := msgpackCodec.unmarshal(m.Data, &reply); err != nil {
		return nil, fmt.Errorf("bus: listing tools: undecodable reply: %w", err)
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("bus: listing tools: worker %s: %s", reply.Worker, reply.Error)
	}
	return &reply, nil
}

// Schemas lists the tool schemas the session may see now (reset_tools
// first, then the basic group's and the active groups' tools), honouring
// the latest groups revision the client saw for the session. It asks one
// worker (SubjectList); in a fleet whose workers serve different tools the
// discovery Fleet gives the merged view.
func (c *Client) Schemas(ctx context.Context, session string) ([]toolkit.FunctionSchema, error) {
	reply, err := c.List(ctx, session)
	if err != nil {
		return nil, err
	}
	return reply.Schemas, nil
}
