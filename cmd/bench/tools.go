package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/toolkit"
)

// Raw baseline subjects: the same work as the bench tools with nothing but
// nats.go request/reply around it.
const (
	rawEcho    = "bench.raw.echo"
	rawPayload = "bench.raw.payload"
	rawStream  = "bench.raw.stream"
	rawCPU     = "bench.raw.cpu"
	// rawBlock and rawCancel are the cancel scenario's raw baseline (see
	// rawBlocker).
	rawBlock   = "bench.raw.block"
	rawCancel  = "bench.raw.cancel."
	rawStarted = "started"
	rawQueue   = "bench-raw"
	rawJSEcho  = "bench.rawjs.echo"
	hdrReply   = "Bench-Reply"

	hdrOut    = "Bench-Out"
	hdrChunks = "Bench-Chunks"
	hdrSize   = "Bench-Size"
	hdrIters  = "Bench-Iters"

	groupsBucket = "bench_groups"
	extraGroup   = "extra"
	metaDoneNS   = "ctx_done_ns"
)

// Limits of the bench tools' inputs; beyond them a call is invalid_input.
const (
	maxOut    = 64 << 20
	maxChunks = 100_000
	maxSleep  = 60_000 // ms
	maxIters  = 10_000_000
	maxBlock  = time.Minute
)

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

// pattern is the deterministic content of n bytes every tool and replier
// produces, so the caller can check what it received.
func pattern(n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		b.WriteString(alphabet[:min(len(alphabet), n-b.Len())])
	}
	return b.String()
}

// cpuWork hashes a 64-byte block iters times; the hex digest is the
// result, the same on every host.
func cpuWork(iters int) string {
	sum := sha256.Sum256([]byte(alphabet))
	for range iters {
		sum = sha256.Sum256(sum[:])
	}
	return hex.EncodeToString(sum[:])
}

type echoIn struct {
	Text string `json:"text"`
}

type payloadIn struct {
	Data string `json:"data"`
	Out  int    `json:"out" jsonschema:"bytes to return"`
}

type streamIn struct {
	Chunks int `json:"chunks"`
	Size   int `json:"size" jsonschema:"bytes per chunk"`
}

type sleepIn struct {
	MS float64 `json:"ms" jsonschema:"milliseconds to sleep"`
	// Started asks for a progress report once the call holds its slot
	// (the inflight scenario reads memory when every call has said so).
	Started bool `json:"started,omitempty" jsonschema:"report progress once sleeping"`
}

// writerKey carries the sleep tool's Writer to its function (a Func, so
// that its result takes the same path as before the progress report).
type writerKey struct{}

type cpuIn struct {
	Iters int `json:"iters" jsonschema:"sha256 rounds"`
}

func badInput(format string, args ...any) error {
	return toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentsError: "+format, args...)
}

// benchToolkit builds the tools every bench worker serves. slots bounds
// the sleep calls one worker runs at once (a worker with a fixed pool of
// some scarce resource), which is what makes scale-out visible.
func benchToolkit(state toolkit.GroupState, slots int) (*toolkit.Toolkit, error) {
	tk := toolkit.New(&toolkit.Options{State: state})
	sem := make(chan struct{}, max(slots, 1))
	tools := []*toolkit.Tool{
		toolkit.Func("echo", "Return the text unchanged.",
			func(_ context.Context, in echoIn) (string, error) { return in.Text, nil }),
		toolkit.Func("payload", "Take data of any size and return out bytes.",
			func(_ context.Context, in payloadIn) (string, error) {
				if in.Out < 0 || in.Out > maxOut {
					return "", badInput("out must be 0 to %d, got %d.", maxOut, in.Out)
				}
				return pattern(in.Out), nil
			}),
		toolkit.Stream("stream", "Write chunks chunks of size bytes each.",
			func(_ context.Context, in streamIn, w toolkit.Writer) error {
				if in.Chunks < 0 || in.Chunks > maxChunks || in.Size < 0 || in.Size > maxOut {
					return badInput("chunks must be 0 to %d and size 0 to %d, got %d and %d.", maxChunks, maxOut, in.Chunks, in.Size)
				}
				c := toolkit.Text(pattern(in.Size))
				for range in.Chunks {
					if err := w.Write(c); err != nil {
						return err
					}
				}
				return nil
			}),
		withWriter(toolkit.Func("sleep", "Sleep ms milliseconds in one of the worker's slots.",
			func(ctx context.Context, in sleepIn) (string, error) {
				if in.MS < 0 || in.MS > maxSleep {
					return "", badInput("ms must be 0 to %d, got %g.", maxSleep, in.MS)
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return "", ctx.Err()
				}
				defer func() { <-sem }()
				if w, ok := ctx.Value(writerKey{}).(toolkit.Writer); ok && in.Started {
					if err := w.Progress(toolkit.Progress{Message: "started"}); err != nil {
						return "", err
					}
				}
				t := time.NewTimer(time.Duration(in.MS * float64(time.Millisecond)))
				defer t.Stop()
				select {
				case <-t.C:
					return "slept", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			})),
		toolkit.Func("cpu", "Hash a block iters times and return the digest.",
			func(_ context.Context, in cpuIn) (string, error) {
				if in.Iters < 0 || in.Iters > maxIters {
					return "", badInput("iters must be 0 to %d, got %d.", maxIters, in.Iters)
				}
				return cpuWork(in.Iters), nil
			}),
		toolkit.Stream("block", "Say started, then wait to be cancelled; the final carries when ctx.Done fired.",
			func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
				if err := w.Write(toolkit.Text("started")); err != nil {
					return err
				}
				t := time.NewTimer(maxBlock)
				defer t.Stop()
				select {
				case <-ctx.Done():
					return &toolkit.Error{Code: toolkit.CodeInterrupted, Message: toolkit.InterruptedText,
						Metadata: map[string]any{metaDoneNS: time.Now().UnixNano()}}
				case <-t.C:
					return errors.New("block: never cancelled")
				}
			}),
	}
	for _, t := range tools {
		var opts []toolkit.Option
		if t.Name == "sleep" || t.Name == "echo" {
			// Read-only: the client retries them after a lost worker, the
			// durable path delivers them again (the fault scenario).
			opts = append(opts, toolkit.ReadOnly())
		}
		if err := tk.Add(t, opts...); err != nil {
			return nil, err
		}
	}
	// The sessions scenario: echo, session-bound (its calls go to the
	// worker the session is pinned to).
	if err := tk.Add(toolkit.Func("pinned_echo", "Return the text unchanged, on the session's worker.",
		func(_ context.Context, in echoIn) (string, error) { return in.Text, nil }), toolkit.SessionBound()); err != nil {
		return nil, err
	}
	if err := tk.AddGroup(toolkit.Group{Name: extraGroup, Description: "Tools for the groups scenario."}); err != nil {
		return nil, err
	}
	err := tk.Add(toolkit.Func("extra_echo", "Return the text unchanged, once the extra group is active.",
		func(_ context.Context, in echoIn) (string, error) { return in.Text, nil }), toolkit.InGroup(extraGroup))
	return tk, err
}

// host is what one bench worker runs on its connection: a bus worker with
// the bench tools, the raw repliers and, when asked, the MCP server.
type host struct {
	nc     *nats.Conn
	worker *bus.Worker
	subs   []*nats.Subscription
	httpS  *http.Server
	mcpURL string
	// stopRawJS ends the raw-js puller.
	stopRawJS func()
	blocker   *rawBlocker
}

type hostOptions struct {
	slots     int
	ackWait   time.Duration
	mcpListen string // "" = no MCP server
}

func startHost(ctx context.Context, nc *nats.Conn, o hostOptions) (_ *host, err error) {
	h := &host{nc: nc}
	defer func() {
		if err != nil {
			h.stop(context.Background()) // h, not the nil returned
		}
	}()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	state, err := bus.NewKVState(ctx, js, &bus.KVStateOptions{Bucket: groupsBucket, Storage: jetstream.MemoryStorage})
	if kv.NoJetStream(ctx, js, err) {
		return nil, errors.New("the NATS server has no JetStream, which the bench worker needs (group state, the durable and raw-js systems): start it with -js")
	}
	if err != nil {
		return nil, err
	}
	tk, err := benchToolkit(state, o.slots)
	if err != nil {
		return nil, err
	}
	if h.worker, err = bus.Serve(nc, tk, &bus.WorkerOptions{MaxInFlight: workerMaxInFlight,
		Durable: &bus.DurableOptions{JetStream: js, AckWait: o.ackWait}, Results: &bus.ResultsOptions{JetStream: js},
		Sessions: &bus.SessionsOptions{JetStream: js}}); err != nil {
		return nil, err
	}
	if err := h.startRawJS(ctx, js); err != nil {
		return nil, err
	}
	repliers := map[string]nats.MsgHandler{
		rawEcho: func(m *nats.Msg) { m.Respond(m.Data) },
		rawPayload: func(m *nats.Msg) {
			n, _ := strconv.Atoi(m.Header.Get(hdrOut))
			m.Respond([]byte(pattern(n)))
		},
		rawStream: func(m *nats.Msg) {
			n, _ := strconv.Atoi(m.Header.Get(hdrChunks))
			size, _ := strconv.Atoi(m.Header.Get(hdrSize))
			body := []byte(pattern(size))
			for range n {
				if nc.Publish(m.Reply, body) != nil {
					return
				}
			}
		},
		rawCPU: func(m *nats.Msg) {
			// The bus runs each call on its own goroutine; so does this
			// replier for CPU work, or it would use one core only.
			n, _ := strconv.Atoi(m.Header.Get(hdrIters))
			go m.Respond([]byte(cpuWork(n)))
		},
	}
	h.blocker = &rawBlocker{nc: nc, waiting: map[string]chan struct{}{}, stop: make(chan struct{})}
	repliers[rawBlock] = h.blocker.onBlock
	for subj, cb := range repliers {
		sub, err := nc.QueueSubscribe(subj, rawQueue, cb)
		if err != nil {
			return nil, err
		}
		sub.SetPendingLimits(-1, -1)
		h.subs = append(h.subs, sub)
	}
	// Cancels reach every replier, as a worker's do: the one that has the
	// call is not known.
	sub, err := nc.Subscribe(rawCancel+"*", h.blocker.onCancel)
	if err != nil {
		return nil, err
	}
	sub.SetPendingLimits(-1, -1)
	h.subs = append(h.subs, sub)
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	if o.mcpListen != "" {
		if err := h.startMCP(o.mcpListen); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// rawJSStream is the raw-js baseline's work queue, stored as the calls
// stream is (file storage, deduplicated by message id).
func rawJSStream() jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: "bench_rawjs", Subjects: []string{"bench.rawjs.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}
}

// workerMaxInFlight is how many calls a bench worker runs at once.
const workerMaxInFlight = 4096

// startRawJS pulls the raw-js baseline's calls: fetch what arrives,
// reply with the body, acknowledge.
func (h *host) startRawJS(ctx context.Context, js jetstream.JetStream) error {
	st, err := js.CreateOrUpdateStream(ctx, rawJSStream())
	if err != nil {
		return fmt.Errorf("raw-js stream: %w", err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "echo", FilterSubject: rawJSEcho,
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: -1})
	if err != nil {
		return fmt.Errorf("raw-js consumer: %w", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			batch, err := cons.Fetch(64, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			for m := range batch.Messages() {
				h.nc.Publish(m.Headers().Get(hdrReply), m.Data())
				m.Ack()
			}
		}
	}()
	h.stopRawJS = func() { close(stop); <-done }
	return nil
}

// startMCP serves the echo tool with the go-sdk over Streamable HTTP.
func (h *host) startMCP(addr string) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Return the text unchanged."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("MCP listener: %w", err)
	}
	h.httpS = &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go h.httpS.Serve(ln)
	h.mcpURL = "http://" + ln.Addr().String()
	return nil
}

// stop stops the worker (letting calls finish), the repliers and the MCP
// server; the connection is the caller's.
func (h *host) stop(ctx context.Context) {
	if h.worker != nil {
		h.worker.Stop(ctx)
	}
	for _, s := range h.subs {
		s.Unsubscribe()
	}
	if h.stopRawJS != nil {
		h.stopRawJS()
	}
	if h.blocker != nil {
		h.blocker.end()
	}
	if h.httpS != nil {
		h.httpS.Shutdown(ctx)
	}
}

// rawBlocker is the cancel scenario's raw baseline replier, the block
// tool with nothing but nats.go around it: a request on rawBlock (its
// body a token) answers rawStarted on its reply subject from a goroutine
// of its own, which then waits until a message on rawCancel+token closes
// its channel and answers when it woke (unix nanoseconds, as the block
// tool's final carries when its ctx.Done fired). The cancel travels as a
// toolbus cancel does: published by the caller, heard on a plain
// subscription's goroutine, handed to the waiting goroutine.
type rawBlocker struct {
	nc      *nats.Conn
	mu      sync.Mutex
	waiting map[string]chan struct{}
	stop    chan struct{} // closed when the host stops
	ended   sync.Once
}

// end wakes every waiting goroutine: the host stops.
func (b *rawBlocker) end() { b.ended.Do(func() { close(b.stop) }) }

func (b *rawBlocker) onBlock(m *nats.Msg) {
	token := string(m.Data)
	if token == "" || len(token) > 64 || m.Reply == "" {
		return
	}
	woke := make(chan struct{})
	b.mu.Lock()
	if b.waiting[token] != nil {
		b.mu.Unlock()
		return // a token in use: the caller's stall guard reports it
	}
	b.waiting[token] = woke
	b.mu.Unlock()
	go func() {
		defer func() {
			b.mu.Lock()
			if b.waiting[token] == woke {
				delete(b.waiting, token)
			}
			b.mu.Unlock()
		}()
		t := time.NewTimer(rawStartedAfter)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.stop:
			return
		}
		if b.nc.Publish(m.Reply, []byte(rawStarted)) != nil {
			return
		}
		t.Reset(maxBlock)
		select {
		case <-woke:
			b.nc.Publish(m.Reply, strconv.AppendInt(nil, time.Now().UnixNano(), 10))
		case <-t.C:
		case <-b.stop:
		}
	}()
}

func (b *rawBlocker) onCancel(m *nats.Msg) {
	token := strings.TrimPrefix(m.Subject, rawCancel)
	b.mu.Lock()
	defer b.mu.Unlock()
	if woke := b.waiting[token]; woke != nil {
		close(woke)
		delete(b.waiting, token)
	}
}

// rawStartedAfter is how long the raw replier waits before it answers
// started: the worker's default FlushDelay, for which it holds the block
// tool's first chunk. Both systems then cancel at the same pace, so their
// cancels meet the same load (answering at once, the raw one would
// cancel seven times as often, keep the machine's CPUs busier and, on a
// virtual machine whose idle CPUs are slow to wake, be faster for it).
const rawStartedAfter = 5 * time.Millisecond

var patternCache sync.Map // int → string

// cachedPattern is pattern(n), computed once per n.
func cachedPattern(n int) string {
	if v, ok := patternCache.Load(n); ok {
		return v.(string)
	}
	s := pattern(n)
	patternCache.Store(n, s)
	return s
}

// withWriter hands t's function the call's Writer in its ctx (writerKey).
func withWriter(t *toolkit.Tool) *toolkit.Tool {
	h := t.Handler
	t.Handler = func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return h(context.WithValue(ctx, writerKey{}, w), call, w)
	}
	return t
}
