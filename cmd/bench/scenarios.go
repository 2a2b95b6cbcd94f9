package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// callID returns a new unique call id. The ids come from a pool of NUID
// generators, not nuid.Next's one generator behind a mutex: 64 callers
// taking turns on that lock is the bench's cost, which it would charge to
// the systems that need ids.
func callID() string {
	g := ids.Get().(*nuid.NUID)
	id := g.Next()
	ids.Put(g)
	return id
}

var ids = sync.Pool{New: func() any { return nuid.New() }}

// Systems measured side by side.
const (
	sysToolbus = "toolbus"
	sysRaw     = "raw"
	sysMCP     = "mcp-http"
	// sysDurable is toolbus's durable path (a JetStream work queue);
	// sysRawJS its baseline: the same work queue with nothing around it
	// (publish, pull, acknowledge, reply).
	sysDurable = "durable"
	sysRawJS   = "raw-js"
	// sysQueue and sysPinned are the sessions scenario's: calls in
	// sessions through the queue group, and to the session's worker.
	sysQueue  = "queue"
	sysPinned = "pinned"
)

// Scenario names, in the order a run measures them.
var allScenarios = []string{"echo", "payload", "stream", "sleep", "cpu", "cancel", "groups", "sessions", "inflight"}

// Bench-side error codes, next to the toolkit's codes in the report.
const (
	errNoFinal    = "no_final"
	errDupFinal   = "duplicate_final"
	errWrongID    = "wrong_id"
	errBadContent = "bad_content"
	errLostChunks = "lost_chunks"
	errNATS       = "nats_error"
	errMCP        = "mcp_error"
	errNotRunning = "not_started"
)

// series is one line of a scenario's chart: a system with a fleet size.
type series struct {
	system  string
	workers int // fleet size to run with; 0 = whatever is up
	call    callFunc
	close   func()
	// byFleet: the label names the fleet size (scenarios that compare
	// fleet sizes).
	byFleet bool
	// held is call for the inflight scenario: it calls seen once its
	// worker has started the call (before the final).
	held func(ctx context.Context, seen func()) outcome
}

func (s series) label() string {
	if s.byFleet && s.workers > 0 {
		return fmt.Sprintf("%s-%dw", s.system, s.workers)
	}
	return s.system
}

// scenario builds its series on an env. unitName is what units count
// ("chunks" for stream); baselines are the labels its ratios are
// computed against.
type scenario struct {
	name      string
	unitName  string
	baselines []string
	series    []series
	note      string
}

func buildScenario(ctx context.Context, e *env, name string) (*scenario, error) {
	cfg := e.cfg
	sc := &scenario{name: name}
	want := func(sys string) bool { return cfg.systems[sys] }
	workers := 0
	if _, ok := e.fleet.(externalFleet); !ok {
		workers = max(cfg.workers, 1)
	}
	add := func(sys string, call callFunc, closeFn func()) {
		sc.series = append(sc.series, series{system: sys, workers: workers, call: call, close: closeFn})
	}
	switch name {
	case "echo":
		text := cachedPattern(cfg.textSize)
		sc.baselines = []string{sysRaw, sysMCP}
		// One input for every call, as the raw baseline sends one body:
		// the client only reads it.
		in := map[string]any{"text": text}
		add(sysToolbus, busCall(e, "echo", func(int) map[string]any { return in }, text), nil)
		if want(sysRaw) {
			add(sysRaw, rawRequest(e, rawEcho, []byte(text), nil, []byte(text)), nil)
		}
		if want(sysDurable) {
			add(sysDurable, busCallDurable(e, "echo", map[string]any{"text": text}, text), nil)
		}
		if want(sysRawJS) {
			call, closeFn, err := rawJSBaseline(ctx, e, []byte(text))
			if err != nil {
				return nil, err
			}
			sc.baselines = append(sc.baselines, sysRawJS)
			add(sysRawJS, call, closeFn)
		}
		switch {
		case !want(sysMCP):
		case e.mcpURL == "":
			sc.note = "mcp-http: no baseline, no MCP server to call (with --nats and no --workers, give --mcp URL of a \"bench worker --mcp-listen\")"
		default:
			call, closeFn, err := mcpEcho(ctx, e, text)
			if err != nil {
				return nil, err
			}
			add(sysMCP, call, closeFn)
		}
	case "payload":
		data, out := cachedPattern(cfg.inSize), cachedPattern(cfg.outSize)
		sc.baselines = []string{sysRaw}
		add(sysToolbus, busCall(e, "payload", func(int) map[string]any { return map[string]any{"data": data, "out": cfg.outSize} }, out), nil)
		limit := int(e.caller.MaxPayload()) - 512
		switch {
		case !want(sysRaw):
		case cfg.inSize > limit || cfg.outSize > limit:
			sc.note = fmt.Sprintf("raw: no baseline, a request or reply over max_payload (%d bytes) cannot be sent raw", e.caller.MaxPayload())
		default:
			add(sysRaw, rawRequest(e, rawPayload, []byte(data), nats.Header{hdrOut: {strconv.Itoa(cfg.outSize)}}, []byte(out)), nil)
		}
	case "stream":
		sc.unitName = "chunks"
		sc.baselines = []string{sysRaw}
		full := strings.Repeat(cachedPattern(cfg.chunkSize), cfg.chunks)
		in := map[string]any{"chunks": cfg.chunks, "size": cfg.chunkSize}
		add(sysToolbus, busStream(e, in, full, cfg.chunks), nil)
		switch {
		case !want(sysRaw):
		case cfg.chunkSize > int(e.caller.MaxPayload())-512:
			sc.note = fmt.Sprintf("raw: no baseline, a chunk over max_payload (%d bytes) cannot be published raw", e.caller.MaxPayload())
		default:
			call, closeFn, err := rawStreamBaseline(e, cfg.chunks, cfg.chunkSize)
			if err != nil {
				return nil, err
			}
			add(sysRaw, call, closeFn)
		}
	case "sleep":
		in := map[string]any{"ms": float64(cfg.sleep) / float64(time.Millisecond)}
		call := busCall(e, "sleep", func(int) map[string]any { return in }, "slept")
		if workers == 0 || cfg.workers > 0 && len(cfg.sleepWorkers) == 0 {
			add(sysToolbus, call, nil)
			break
		}
		for _, n := range cfg.sleepWorkers {
			sc.series = append(sc.series, series{system: sysToolbus, workers: n, call: call, byFleet: true})
		}
		sc.baselines = []string{sc.series[0].label()}
		sc.note = fmt.Sprintf("each worker runs at most %d sleeps at once (--slots); ratios are scale-out over %s", cfg.slots, sc.baselines[0])
	case "inflight":
		// Measured by measureInFlight: --inflight sleep calls at once.
		sc.note = fmt.Sprintf("%d sleep calls of %s in flight at once; memory per in-flight call: the worker processes' RSS, and the bench process's (client and embedded server), while they run, over before",
			cfg.inflight, cfg.sleep)
		in := map[string]any{"ms": float64(cfg.sleep) / float64(time.Millisecond), "started": true}
		add(sysToolbus, busCall(e, "sleep", func(int) map[string]any { return in }, "slept"), nil)
		sc.series[0].held = func(ctx context.Context, seen func()) outcome {
			id := callID()
			events := e.call(ctx, toolkit.ToolCall{ID: id, Name: "sleep", Input: in})
			final, code := consume(func(yield func(toolkit.Event) bool) {
				for ev := range events {
					if ev.Progress != nil {
						seen()
					}
					if !yield(ev) {
						return
					}
				}
			}, id, nil)
			return checkText(final, code, "slept")
		}
	case "cpu":
		sc.baselines = []string{sysRaw}
		digest := cpuWork(cfg.iters)
		add(sysToolbus, busCall(e, "cpu", func(int) map[string]any { return map[string]any{"iters": cfg.iters} }, digest), nil)
		if want(sysRaw) {
			add(sysRaw, rawRequest(e, rawCPU, nil, nats.Header{hdrIters: {strconv.Itoa(cfg.iters)}}, []byte(digest)), nil)
		}
	case "fault":
		sc.note = fmt.Sprintf("sleep %s calls while a worker process is killed and replaced every %s; again: calls sent or delivered again that ended well",
			cfg.sleep, cfg.faultEvery)
		in := map[string]any{"ms": float64(cfg.sleep) / float64(time.Millisecond)}
		core, err := bus.NewClient(e.caller, &bus.ClientOptions{StallTimeout: time.Second, MaxAttempts: 1})
		if err != nil {
			return nil, err
		}
		retrying, err := bus.NewClient(e.caller, &bus.ClientOptions{StallTimeout: time.Second})
		if err != nil {
			return nil, err
		}
		faultCall := func(c *bus.Client, durable bool) callFunc {
			return func(ctx context.Context, _, _ int) outcome {
				id := callID()
				final, code := consume(e.callOn(ctx, c, toolkit.ToolCall{ID: id, Name: "sleep", Input: in, Durable: durable}), id, nil)
				o := checkText(final, code, "slept")
				o.again = o.code == "" && final.Metadata[wire.MetaAttempts] != nil
				return o
			}
		}
		add("core", faultCall(core, false), func() { core.Close() })
		add("core+retry", faultCall(retrying, false), func() { retrying.Close() })
		add(sysDurable, faultCall(retrying, true), nil)
	case "sessions":
		// One session per caller goroutine: pinned_echo is session-bound,
		// so each session's calls go to its worker (the client sends them
		// there once it knows the pin); echo in the same sessions goes
		// through the queue group.
		sc.note = "echo in sessions (one per caller): through the queue group vs session-bound, pinned to the session's worker"
		sc.baselines = append(sc.baselines, sysQueue)
		text := cachedPattern(cfg.textSize)
		sessionEcho := func(tool string) callFunc {
			return func(ctx context.Context, g, _ int) outcome {
				id := callID()
				final, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: tool, Session: "bench-" + strconv.Itoa(g),
					Input: map[string]any{"text": text}}), id, nil)
				return checkText(withoutMovedNote(final), code, text)
			}
		}
		add(sysQueue, sessionEcho("echo"), nil)
		add(sysPinned, sessionEcho("pinned_echo"), nil)
	case "cancel":
		sc.note = "latency: cancel published → the caller's interrupted final; extra: cancel published → the tool's ctx.Done (raw: → the replier's waiting goroutine woke)"
		sc.baselines = []string{sysRaw}
		add(sysToolbus, busCancel(e), nil)
		if want(sysRaw) {
			call, closeFn, err := rawCancelBaseline(e)
			if err != nil {
				return nil, err
			}
			add(sysRaw, call, closeFn)
		}
	case "groups":
		sc.note = "latency: reset_tools + the call after it; cross: calls that ran on another worker than their reset_tools; extra: those calls alone"
		if workers > 0 {
			workers = max(workers, 2)
		}
		add(sysToolbus, busGroups(e), nil)
		sc.series[0].byFleet = true
	default:
		return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(allScenarios, ", "))
	}
	return sc, nil
}

// consume consumes a bus call and checks it ended with exactly one
// final carrying its id; onChunk sees the chunks.
func consume(events func(func(toolkit.Event) bool), id string, onChunk func(*toolkit.Chunk)) (*toolkit.Response, string) {
	var final *toolkit.Response
	finals := 0
	for ev := range events {
		switch {
		case ev.Final != nil:
			finals++
			final = ev.Final
		case ev.Chunk != nil && onChunk != nil:
			onChunk(ev.Chunk)
		}
	}
	switch {
	case finals == 0:
		return nil, errNoFinal
	case finals > 1:
		return nil, errDupFinal
	case final.ID != id:
		return nil, errWrongID
	}
	if _, lost := final.Metadata[wire.MetaLostChunks]; lost {
		return nil, errLostChunks
	}
	return final, ""
}

// busCall calls a tool over the bus and checks a successful final whose
// text is want.
func busCall(e *env, tool string, input func(i int) map[string]any, want string) callFunc {
	return func(ctx context.Context, _, i int) outcome {
		id := callID()
		final, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: tool, Input: input(i)}), id, nil)
		return checkText(final, code, want)
	}
}

// busCallDurable calls a tool on the durable path.
func busCallDurable(e *env, tool string, input map[string]any, want string) callFunc {
	return func(ctx context.Context, _, _ int) outcome {
		id := callID()
		final, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: tool, Input: input, Durable: true}), id, nil)
		return checkText(final, code, want)
	}
}

// rawJS is the durable path's baseline: a JetStream work queue with
// nothing around it. The caller publishes (and waits for the stream's
// acknowledgement, as the durable client does) with its reply subject in
// a header; a puller on every worker host fetches, replies and
// acknowledges; replies come back on one wildcard inbox subscription.
type rawJS struct {
	e      *env
	js     jetstream.JetStream
	prefix string
	sub    *nats.Subscription
	want   []byte

	mu      sync.Mutex
	pending map[string]chan []byte
	next    uint64
}

func rawJSBaseline(ctx context.Context, e *env, body []byte) (callFunc, func(), error) {
	js, err := jetstream.New(e.caller)
	if err != nil {
		return nil, nil, err
	}
	if _, err := js.CreateOrUpdateStream(ctx, rawJSStream()); err != nil {
		return nil, nil, fmt.Errorf("raw-js stream: %w", err)
	}
	r := &rawJS{e: e, js: js, prefix: e.caller.NewInbox() + ".", want: body, pending: map[string]chan []byte{}}
	if r.sub, err = e.caller.Subscribe(r.prefix+"*", func(m *nats.Msg) {
		r.mu.Lock()
		ch := r.pending[m.Subject[len(r.prefix):]]
		r.mu.Unlock()
		if ch != nil {
			ch <- m.Data
		}
	}); err != nil {
		return nil, nil, err
	}
	r.sub.SetPendingLimits(-1, -1)
	call := func(ctx context.Context, _, _ int) outcome {
		ch := make(chan []byte, 1)
		r.mu.Lock()
		r.next++
		token := strconv.FormatUint(r.next, 36)
		r.pending[token] = ch
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			delete(r.pending, token)
			r.mu.Unlock()
		}()
		msg := &nats.Msg{Subject: rawJSEcho, Header: nats.Header{hdrReply: {r.prefix + token}, jetstream.MsgIDHeader: {callID()}}, Data: body}
		if _, err := r.js.PublishMsg(ctx, msg); err != nil {
			return outcome{code: errNATS}
		}
		select {
		case got := <-ch:
			if !bytes.Equal(got, r.want) {
				return outcome{code: errBadContent}
			}
			return outcome{}
		case <-time.After(r.e.cfg.stall):
			return outcome{code: errNoFinal}
		case <-ctx.Done():
			return outcome{code: errNoFinal}
		}
	}
	return call, func() { r.sub.Unsubscribe() }, nil
}

func checkText(final *toolkit.Response, code, want string) outcome {
	switch {
	case code != "":
		return outcome{code: code}
	case final.State != toolkit.StateSuccess:
		return outcome{code: string(final.Code)}
	case final.Text() != want:
		return outcome{code: errBadContent}
	}
	return outcome{}
}

// withoutMovedNote is final without the line of text a worker adds when
// it took the session over from a worker that is gone (metadata
// session_moved_from): the tool's own content, which the bench checks.
// Workers that end while the sessions scenario runs (started and killed
// outside the bench, with --nats) move sessions.
func withoutMovedNote(final *toolkit.Response) *toolkit.Response {
	if final == nil || final.Metadata[wire.MetaSessionMovedFrom] == nil || len(final.Content) < 2 {
		return final
	}
	r := *final
	r.Content = r.Content[:len(r.Content)-1]
	return &r
}

// busStream calls the stream tool; n chunks are delivered per call.
func busStream(e *env, in map[string]any, want string, n int) callFunc {
	return func(ctx context.Context, _, _ int) outcome {
		id := callID()
		final, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: "stream", Input: in}), id, nil)
		o := checkText(final, code, want)
		o.units = n
		return o
	}
}

// busCancel starts a call of the block tool, cancels it once the tool
// said it started, and measures the cancel's way to the tool and back.
func busCancel(e *env) callFunc {
	return func(ctx context.Context, _, _ int) outcome {
		id := callID()
		var sent time.Time
		var cancelErr error
		final, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: "block"}), id, func(*toolkit.Chunk) {
			if sent.IsZero() {
				sent = time.Now()
				cancelErr = e.client.Cancel(id)
			}
		})
		end := time.Now()
		switch {
		case code != "":
			return outcome{code: code}
		case cancelErr != nil:
			return outcome{code: errNATS}
		case sent.IsZero():
			return outcome{code: errNotRunning}
		case final.Code != toolkit.CodeInterrupted:
			return outcome{code: "not_interrupted:" + string(final.Code)}
		}
		doneNS, ok := asInt64(final.Metadata[metaDoneNS])
		if !ok || !strings.HasPrefix(final.Text(), "started") {
			return outcome{code: errBadContent}
		}
		return outcome{lat: end.Sub(sent), extra: max(time.Duration(doneNS-sent.UnixNano()), 1)}
	}
}

// busGroups activates the extra group for a new session and calls a tool
// in it at once; the fleet's workers share the state in JetStream KV.
func busGroups(e *env) callFunc {
	return func(ctx context.Context, _, _ int) outcome {
		session := callID()
		id := callID()
		reset, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: toolkit.MetaToolName, Session: session,
			Input: map[string]any{extraGroup: true}}), id, nil)
		if code != "" {
			return outcome{code: code}
		}
		if reset.State != toolkit.StateSuccess {
			return outcome{code: string(reset.Code)}
		}
		t0 := time.Now()
		id = callID()
		text := "after reset " + session
		final, code := consume(e.call(ctx, toolkit.ToolCall{ID: id, Name: "extra_echo", Session: session,
			Input: map[string]any{"text": text}}), id, nil)
		o := checkText(final, code, text)
		if o.code == "" {
			o.cross = reset.Metadata[wire.MetaWorker] != final.Metadata[wire.MetaWorker]
			if o.cross {
				o.extra = time.Since(t0)
			}
		}
		return o
	}
}

// rawRequest is the raw baseline: nc.Request to a queue-subscribed
// replier, checking the reply is want.
func rawRequest(e *env, subject string, data []byte, hdr nats.Header, want []byte) callFunc {
	return func(ctx context.Context, _, _ int) outcome {
		m, err := e.caller.RequestMsg(&nats.Msg{Subject: subject, Header: hdr, Data: data}, e.cfg.stall)
		if err != nil {
			return outcome{code: errNATS}
		}
		if !bytes.Equal(m.Data, want) {
			return outcome{code: errBadContent}
		}
		return outcome{}
	}
}

// rawStreamer is the raw streaming baseline: a request asks the replier
// to publish n messages to the caller's reply subject; all calls share one
// wildcard inbox subscription, as the bus client does.
type rawStreamer struct {
	e      *env
	prefix string
	sub    *nats.Subscription
	body   []byte
	n      int

	mu      sync.Mutex
	pending map[string]*rawStreamCall
	next    uint64
}

type rawStreamCall struct {
	got, bad int
	done     chan struct{}
}

func rawStreamBaseline(e *env, n, size int) (callFunc, func(), error) {
	r := &rawStreamer{e: e, prefix: e.caller.NewInbox() + ".", body: []byte(pattern(size)), n: n, pending: map[string]*rawStreamCall{}}
	sub, err := e.caller.Subscribe(r.prefix+"*", r.onMsg)
	if err != nil {
		return nil, nil, err
	}
	sub.SetPendingLimits(-1, -1)
	r.sub = sub
	hdr := nats.Header{hdrChunks: {strconv.Itoa(n)}, hdrSize: {strconv.Itoa(size)}}
	call := func(ctx context.Context, _, _ int) outcome {
		c := &rawStreamCall{done: make(chan struct{})}
		r.mu.Lock()
		r.next++
		token := strconv.FormatUint(r.next, 36)
		r.pending[token] = c
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			delete(r.pending, token)
			r.mu.Unlock()
		}()
		if err := e.caller.PublishMsg(&nats.Msg{Subject: rawStream, Reply: r.prefix + token, Header: hdr}); err != nil {
			return outcome{code: errNATS}
		}
		t := time.NewTimer(e.cfg.stall)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			return outcome{code: errLostChunks}
		}
		if c.bad > 0 {
			return outcome{code: errBadContent}
		}
		return outcome{units: n}
	}
	return call, func() { sub.Unsubscribe() }, nil
}

// onMsg runs on the subscription's one goroutine, so a call's counters
// need no lock of their own.
func (r *rawStreamer) onMsg(m *nats.Msg) {
	r.mu.Lock()
	c := r.pending[m.Subject[len(r.prefix):]]
	r.mu.Unlock()
	if c == nil || c.got >= r.n {
		return
	}
	c.got++
	if !bytes.Equal(m.Data, r.body) {
		c.bad++
	}
	if c.got == r.n {
		close(c.done)
	}
}

// rawCancelBaseline is the cancel scenario's baseline: the block tool's
// call and cancel with nothing but nats.go around them (rawBlocker is its
// replier). A call publishes a request with its reply subject under one
// wildcard inbox subscription (as the bus client's calls share one), and
// once the replier said it started publishes the cancel on its own
// subject and waits for the answer saying when the replier's goroutine
// woke.
func rawCancelBaseline(e *env) (callFunc, func(), error) {
	prefix := e.caller.NewInbox() + "."
	var mu sync.Mutex
	pending := map[string]chan []byte{}
	sub, err := e.caller.Subscribe(prefix+"*", func(m *nats.Msg) {
		mu.Lock()
		answers := pending[m.Subject[len(prefix):]]
		mu.Unlock()
		if answers != nil {
			select {
			case answers <- m.Data:
			default: // more than the two answers of a call: dropped, never blocking the others'
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	sub.SetPendingLimits(-1, -1)
	call := func(ctx context.Context, _, _ int) outcome {
		token := callID()
		answers := make(chan []byte, 2)
		mu.Lock()
		pending[token] = answers
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(pending, token)
			mu.Unlock()
		}()
		if err := e.caller.PublishMsg(&nats.Msg{Subject: rawBlock, Reply: prefix + token, Data: []byte(token)}); err != nil {
			return outcome{code: errNATS}
		}
		t := time.NewTimer(e.cfg.stall)
		defer t.Stop()
		var started []byte
		select {
		case started = <-answers:
		case <-t.C:
			return outcome{code: errNotRunning}
		}
		if string(started) != rawStarted {
			return outcome{code: errBadContent}
		}
		sent := time.Now()
		if err := e.caller.Publish(rawCancel+token, nil); err != nil {
			return outcome{code: errNATS}
		}
		var final []byte
		select {
		case final = <-answers:
		case <-t.C:
			return outcome{code: errNoFinal}
		}
		end := time.Now()
		woke, err := strconv.ParseInt(string(final), 10, 64)
		if err != nil {
			return outcome{code: errBadContent}
		}
		return outcome{lat: end.Sub(sent), extra: max(time.Duration(woke-sent.UnixNano()), 1)}
	}
	return call, func() { sub.Unsubscribe() }, nil
}

// mcpEcho is the MCP baseline: a go-sdk client session over Streamable
// HTTP, shared by all callers as the bus client is.
func mcpEcho(ctx context.Context, e *env, text string) (callFunc, func(), error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolbus-bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: e.mcpURL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp-http baseline: connecting to %s: %w", e.mcpURL, err)
	}
	args := map[string]any{"text": text}
	call := func(ctx context.Context, _, _ int) outcome {
		cctx, cancel := context.WithTimeout(ctx, e.cfg.stall)
		defer cancel()
		res, err := sess.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		if err != nil {
			return outcome{code: errMCP}
		}
		if res.IsError || len(res.Content) != 1 {
			return outcome{code: errBadContent}
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != text {
			return outcome{code: errBadContent}
		}
		return outcome{}
	}
	return call, func() { sess.Close(); hc.CloseIdleConnections() }, nil
}

// asInt64 reads an integer decoded from msgpack or JSON.
func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	case float64:
		return int64(x), true
	case int:
		return int64(x), true
	}
	return 0, false
}
