package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

type strictIn struct {
	Query string `json:"query" jsonschema:"What to look for."`
	Limit int    `json:"limit,omitempty" minimum:"1" maximum:"100"`
}

// TestCallPaths covers every way a call ends, in the documented order of
// checks: not found, group inactive, invalid input, then the tool.
func TestCallPaths(t *testing.T) {
	ctx := context.Background()
	var panics int
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "Web."})
	mustAdd(t, tk, writes("fetch", nil, toolkit.Text("page")), toolkit.InGroup("web"))
	mustAdd(t, tk, toolkit.Func("search", "Search.", func(ctx context.Context, in strictIn) (string, error) {
		return fmt.Sprintf("%s/%d", in.Query, in.Limit), nil
	}))
	mustAdd(t, tk, toolkit.Raw("ratio", "Ratio.", objectSchema(map[string]any{"r": map[string]any{"type": "number", "minimum": 0, "exclusiveMaximum": 1}}), echoInput))
	mustAdd(t, tk, toolkit.Func("run", "Run.", func(ctx context.Context, in modeIn) (string, error) { return in.Mode, nil }))
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", objectSchema(map[string]any{"n": map[string]any{"type": "integer"}}, "n"), echoInput))
	mustAdd(t, tk, writes("fails", errors.New("disk full"), toolkit.Text("partial ")))
	mustAdd(t, tk, writes("busy", &toolkit.Error{Code: toolkit.CodeOverloaded, Message: "Too busy.", RetryAfter: 1500 * time.Millisecond, Metadata: map[string]any{"queue": 9}}))
	mustAdd(t, tk, writes("mcp_error", nil, toolkit.Chunk{Content: []toolkit.Block{textBlock("", "server said no")}, State: toolkit.StateError}))
	mustAdd(t, tk, writes("url_merge", nil,
		toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "u", URL: "https://x/1"}}},
		toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "u", URL: "https://x/2"}}},
	))
	mustAdd(t, tk, toolkit.Raw("panics", "P.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		panics++
		_ = w.Write(toolkit.Text("before "))
		var m map[string]int
		m["boom"] = 1 // nil map write
		return nil
	}))
	mustAdd(t, tk, writes("meta", nil,
		toolkit.Chunk{State: toolkit.StateRunning, Metadata: map[string]any{"a": 1, "b": 1}},
		toolkit.Chunk{State: toolkit.StateRunning, Metadata: map[string]any{"b": 2}},
	))

	tests := []struct {
		name       string
		call       toolkit.ToolCall
		wantState  toolkit.State
		wantCode   toolkit.Code
		wantText   string // exact, or a prefix when it ends in "…"
		wantMaxLen int    // when set, the longest the text may be
		wantChunks int
		wantMeta   map[string]any
	}{
		{name: "unknown tool", call: toolkit.ToolCall{Name: "nope"}, wantState: toolkit.StateError, wantCode: toolkit.CodeNotFound,
			wantText: "ToolNotFoundError: The tool named 'nope' doesn't exist.", wantChunks: 1},
		{name: "unknown tool with an invalid name", call: toolkit.ToolCall{Name: "a.b>"}, wantState: toolkit.StateError, wantCode: toolkit.CodeNotFound,
			wantText: "ToolNotFoundError: The tool named 'a.b>' doesn't exist.", wantChunks: 1},
		{name: "inactive group (checked before input)", call: toolkit.ToolCall{Name: "fetch", Input: map[string]any{"junk": true}}, wantState: toolkit.StateError, wantCode: toolkit.CodeGroupInactive,
			wantText: "ToolGroupInactiveError: The tool 'fetch' in group 'web' is currently inactive. You should first activate the group by calling the 'reset_tools' tool.", wantChunks: 1},
		{name: "typed: missing required field", call: toolkit.ToolCall{Name: "search", Input: map[string]any{}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': required: missing properties: [\"query\"]", wantChunks: 1},
		{name: "typed: nil input", call: toolkit.ToolCall{Name: "search"}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': required: missing properties: [\"query\"]", wantChunks: 1},
		{name: "typed: wrong type", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": 1.0}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': validating /properties/query: type: 1 has type \"integer\", want \"string\"", wantChunks: 1},
		{name: "typed: out of range", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": "q", "limit": 500.0}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': validating /properties/limit: maximum: 500 is greater than 100", wantChunks: 1},
		{name: "typed: below the minimum", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": "q", "limit": 0.0}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': validating /properties/limit: minimum: 0 is less than 1", wantChunks: 1},
		{name: "raw: exclusive bound with a fraction", call: toolkit.ToolCall{Name: "ratio", Input: map[string]any{"r": 1.5}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'ratio': validating /properties/r: exclusiveMaximum: 1.5 is greater than or equal to 1", wantChunks: 1},
		{name: "raw: below the minimum", call: toolkit.ToolCall{Name: "ratio", Input: map[string]any{"r": -0.25}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'ratio': validating /properties/r: minimum: -0.25 is less than 0", wantChunks: 1},
		{name: "typed: not in the enum", call: toolkit.ToolCall{Name: "run", Input: map[string]any{"mode": "medium"}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'run': validating /properties/mode: enum: medium does not equal any of: [fast slow]", wantChunks: 1},
		{name: "typed: unknown field", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": "q", "extra": 1.0}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': …", wantChunks: 1},
		{name: "typed: a huge wrong value is not echoed whole", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": make([]any, 100_000)}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': validating /properties/query: type: [<nil> <nil>…", wantChunks: 1, wantMaxLen: 1200},
		{name: "typed: fraction for an integer", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": "q", "limit": 2.5}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'search': validating /properties/limit: type: 2.5 has type \"number\", want \"integer\"", wantChunks: 1},
		{name: "typed: valid", call: toolkit.ToolCall{Name: "search", Input: map[string]any{"query": "q", "limit": 7.0}}, wantState: toolkit.StateSuccess,
			wantText: "q/7", wantChunks: 1},
		{name: "raw: wrong type", call: toolkit.ToolCall{Name: "raw", Input: map[string]any{"n": "seven"}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'raw': validating /properties/n: type: seven has type \"string\", want \"integer\"", wantChunks: 1},
		{name: "raw: null for a required field", call: toolkit.ToolCall{Name: "raw", Input: map[string]any{"n": nil}}, wantState: toolkit.StateError, wantCode: toolkit.CodeInvalidInput,
			wantText: "Input validation failed for tool 'raw': …", wantChunks: 1},
		{name: "raw: Go int accepted", call: toolkit.ToolCall{Name: "raw", Input: map[string]any{"n": 3}}, wantState: toolkit.StateSuccess,
			wantText: `{"n": 3}`, wantChunks: 1},
		{name: "tool error keeps the partial output", call: toolkit.ToolCall{Name: "fails"}, wantState: toolkit.StateError, wantCode: toolkit.CodeToolError,
			wantText: "partial disk full", wantChunks: 2},
		{name: "*Error keeps its code, retry-after and metadata", call: toolkit.ToolCall{Name: "busy"}, wantState: toolkit.StateError, wantCode: toolkit.CodeOverloaded,
			wantText: "Too busy.", wantChunks: 1, wantMeta: map[string]any{"retry_after_ms": int64(1500), "queue": 9}},
		{name: "an error chunk from the tool", call: toolkit.ToolCall{Name: "mcp_error"}, wantState: toolkit.StateError, wantCode: toolkit.CodeToolError,
			wantText: "server said no", wantChunks: 1},
		{name: "URL data cannot merge", call: toolkit.ToolCall{Name: "url_merge"}, wantState: toolkit.StateError, wantCode: toolkit.CodeToolError,
			wantText: `cannot append a data block with a URL source to block "u"`, wantChunks: 3},
		{name: "panic", call: toolkit.ToolCall{Name: "panics"}, wantState: toolkit.StateError, wantCode: toolkit.CodeInternal,
			wantText: "before InternalError: the tool 'panics' failed unexpectedly (panic: assignment to entry in nil map).", wantChunks: 2},
		{name: "metadata: last write wins", call: toolkit.ToolCall{Name: "meta"}, wantState: toolkit.StateSuccess,
			wantChunks: 2, wantMeta: map[string]any{"a": 1, "b": 2}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.ID = fmt.Sprint("call-", i)
			r := collect(t, tk, ctx, tt.call)
			if r.final.State != tt.wantState || r.final.Code != tt.wantCode {
				t.Errorf("final = %s/%q, want %s/%q (%q)", r.final.State, r.final.Code, tt.wantState, tt.wantCode, r.final.Text())
			}
			if prefix, ok := strings.CutSuffix(tt.wantText, "…"); ok {
				if !strings.HasPrefix(r.final.Text(), prefix) {
					t.Errorf("text = %q, want prefix %q", r.final.Text(), prefix)
				}
			} else if r.final.Text() != tt.wantText {
				t.Errorf("text = %q\nwant   %q", r.final.Text(), tt.wantText)
			}
			if tt.wantMaxLen > 0 && len(r.final.Text()) > tt.wantMaxLen {
				t.Errorf("text of %d bytes, want at most %d", len(r.final.Text()), tt.wantMaxLen)
			}
			if len(r.chunks) != tt.wantChunks {
				t.Errorf("got %d chunks, want %d: %+v", len(r.chunks), tt.wantChunks, r.chunks)
			}
			if tt.wantState != toolkit.StateSuccess && len(r.chunks) > 0 {
				if last := r.chunks[len(r.chunks)-1]; last.State != tt.wantState {
					t.Errorf("last chunk state = %q, want %q (the caller sees the error as it happens)", last.State, tt.wantState)
				}
			}
			if tt.wantMeta != nil {
				jsonEqual(t, "metadata", r.final.Metadata, tt.wantMeta)
			}
			if err := r.final.Err(); (err == nil) != (tt.wantState == toolkit.StateSuccess) || (err != nil && toolkit.CodeOf(err) != tt.wantCode) {
				t.Errorf("Err() = %v", err)
			}
		})
	}
	// The toolkit kept serving after the panic.
	if panics != 1 {
		t.Errorf("panicking tool ran %d times", panics)
	}
	if r := collect(t, tk, ctx, toolkit.ToolCall{ID: "after-panic", Name: "search", Input: map[string]any{"query": "ok"}}); r.final.State != toolkit.StateSuccess {
		t.Errorf("call after a panic: %+v", r.final)
	}
}

// blocker writes "partial", signals started, then waits for its context
// and returns what the context says (wrapped, as tools do).
func blocker(started chan<- struct{}) *toolkit.Tool {
	return toolkit.Raw("block", "Blocks until cancelled.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text("partial")); err != nil {
			return err
		}
		close(started)
		<-ctx.Done()
		return fmt.Errorf("reading: %w", ctx.Err())
	})
}

// A call whose context ended before its tool started (it waited for a
// slot, say) does not run the tool: its caller has been answered.
func TestEndedBeforeStartDoesNotRun(t *testing.T) {
	for _, tt := range []struct {
		name string
		ctx  func() context.Context
		code toolkit.Code
	}{
		{"cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, toolkit.CodeInterrupted},
		{"past its deadline", func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}, toolkit.CodeTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ran atomic.Bool
			tk := newToolkit(t, nil)
			mustAdd(t, tk, toolkit.Func("effect", "Has an effect.", func(context.Context, struct{}) (string, error) {
				ran.Store(true)
				return "done", nil
			}))
			if r := tk.Invoke(tt.ctx(), toolkit.ToolCall{ID: "c", Name: "effect"}); r.Code != tt.code || ran.Load() {
				t.Fatalf("final %s %q, tool ran %v; want %s and no run", r.Code, r.Text(), ran.Load(), tt.code)
			}
		})
	}
}

func TestInterrupt(t *testing.T) {
	tests := []struct {
		name      string
		cancel    func(ctx context.Context) (context.Context, func())
		wantState toolkit.State
		wantCode  toolkit.Code
		wantLast  string
	}{
		{
			name: "caller cancels",
			cancel: func(ctx context.Context) (context.Context, func()) {
				ctx, cancel := context.WithCancel(ctx)
				return ctx, cancel
			},
			wantState: toolkit.StateInterrupted, wantCode: toolkit.CodeInterrupted, wantLast: toolkit.InterruptedText,
		},
		{
			name: "caller cancels with a cause",
			cancel: func(ctx context.Context) (context.Context, func()) {
				ctx, cancel := context.WithCancelCause(ctx)
				return ctx, func() { cancel(toolkit.ErrCallerCancelled) }
			},
			wantState: toolkit.StateInterrupted, wantCode: toolkit.CodeInterrupted, wantLast: toolkit.InterruptedText,
		},
		{
			name: "deadline",
			cancel: func(ctx context.Context) (context.Context, func()) {
				// What a deadline passing while the tool runs does.
				ctx, cancel := context.WithCancelCause(ctx)
				return ctx, func() { cancel(context.DeadlineExceeded) }
			},
			wantState: toolkit.StateError, wantCode: toolkit.CodeTimeout, wantLast: "TimeoutError: The tool call exceeded its deadline and was stopped.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{})
			tk := newToolkit(t, nil)
			mustAdd(t, tk, blocker(started))
			ctx, cancel := tt.cancel(context.Background())
			t.Cleanup(cancel)
			go func() { <-started; cancel() }()
			r := collect(t, tk, ctx, toolkit.ToolCall{ID: "c", Name: "block"})
			if r.final.State != tt.wantState || r.final.Code != tt.wantCode {
				t.Errorf("final = %s/%s", r.final.State, r.final.Code)
			}
			if len(r.chunks) != 2 || r.chunks[0].Content[0].Text != "partial" {
				t.Fatalf("chunks = %+v", r.chunks)
			}
			last := r.chunks[1]
			if last.State != tt.wantState || last.Content[0].Text != tt.wantLast {
				t.Errorf("last chunk = %s %q, want %s %q", last.State, last.Content[0].Text, tt.wantState, tt.wantLast)
			}
			if want := "partial" + tt.wantLast; r.final.Text() != want {
				t.Errorf("final text = %q, want the partial output kept: %q", r.final.Text(), want)
			}
		})
	}
}

func TestEarlyStop(t *testing.T) {
	writeErr := make(chan error, 1)
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("many", "M.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for i := 0; ; i++ {
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				writeErr <- err
				if err := w.Progress(toolkit.Progress{Progress: 1}); !errors.Is(err, toolkit.ErrStopped) {
					t.Errorf("Progress after stop = %v", err)
				}
				return err
			}
		}
	}))
	n := 0
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "c", Name: "many"}) {
		if ev.Final != nil {
			t.Fatal("got a final after 2 chunks")
		}
		n++
		if n == 2 {
			break
		}
	}
	if err := <-writeErr; !errors.Is(err, toolkit.ErrStopped) {
		t.Errorf("Write after the consumer stopped = %v, want ErrStopped", err)
	}
	// Stopping at the final is fine too.
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "d", Name: "nope"}) {
		if ev.Final != nil {
			break
		}
	}
}

func TestProgressAndServe(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("work", "W.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for i := 1; i <= 2; i++ {
			if err := w.Progress(toolkit.Progress{Progress: float64(i), Total: 2, Message: "step"}); err != nil {
				return err
			}
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				return err
			}
		}
		return nil
	}))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "p", Name: "work"})
	if len(r.progress) != 2 || r.progress[1].Progress != 2 || r.final.Text() != "12" {
		t.Errorf("progress %+v, final %q (progress is never part of the result)", r.progress, r.final.Text())
	}

	// Dispatch pushes every event, error chunks included, to the writer.
	var order []string
	out := toolkit.WriterFuncs{
		Chunk: func(c toolkit.Chunk) error { order = append(order, "chunk:"+string(c.State)); return nil },
		Prog:  func(p toolkit.Progress) error { order = append(order, "progress"); return nil },
	}
	resp := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "s", Name: "work"}, out)
	if got := strings.Join(order, ","); got != "progress,chunk:running,progress,chunk:running" || resp.ID != "s" || resp.Text() != "12" {
		t.Errorf("Dispatch order %s, resp %+v", got, resp)
	}
	order = nil
	resp = tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "n", Name: "nope"}, out)
	if strings.Join(order, ",") != "chunk:error" || resp.Code != toolkit.CodeNotFound {
		t.Errorf("Serve of an unknown tool: %v %+v", order, resp)
	}
	// A WriterFuncs with nil functions discards.
	if resp := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "z", Name: "work"}, toolkit.WriterFuncs{}); resp.Text() != "12" {
		t.Errorf("discarding writer: %+v", resp)
	}
}

// failingState is a GroupState whose storage is down.
type failingState struct{ minRev chan uint64 }

func (f failingState) Load(ctx context.Context, session string, minRevision uint64) ([]string, uint64, bool, error) {
	if f.minRev != nil {
		f.minRev <- minRevision
	}
	return nil, 0, false, errors.New("kv: connection refused")
}

func (f failingState) Store(ctx context.Context, session string, groups []string) (uint64, error) {
	return 0, errors.New("kv: connection refused")
}

func TestGroupStateFailures(t *testing.T) {
	st := failingState{minRev: make(chan uint64, 1)}
	tk := newToolkit(t, &toolkit.Options{State: st})
	mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
	mustAdd(t, tk, writes("t", nil), toolkit.InGroup("g"))
	mustAdd(t, tk, writes("basic_tool", nil, toolkit.Text("ok")))

	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "t", Session: "s", GroupsRevision: 42})
	if r.final.Code != toolkit.CodeUnavailable || !strings.Contains(r.final.Text(), "connection refused") {
		t.Errorf("load failure: %+v", r.final)
	}
	if rev := <-st.minRev; rev != 42 {
		t.Errorf("GroupState saw minRevision %d, want the call's 42", rev)
	}
	r = collect(t, tk, context.Background(), toolkit.ToolCall{ID: "2", Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"g": true}})
	if r.final.Code != toolkit.CodeUnavailable || !strings.Contains(r.final.Text(), "could not store") {
		t.Errorf("store failure: %+v", r.final)
	}
	// Basic tools never touch the state.
	if r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "3", Name: "basic_tool", Session: "s"}); r.final.Text() != "ok" {
		t.Errorf("basic tool: %+v", r.final)
	}
	if _, err := tk.SessionSchemas(context.Background(), "s", 0); err == nil {
		t.Error("SessionSchemas hid the state error")
	}
}

func TestMemoryStateRevisions(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
	var revs []uint64
	for i, on := range []bool{true, false, true} {
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: fmt.Sprint(i), Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"g": on}})
		rev, ok := r.Metadata[toolkit.MetaGroupsRevision].(uint64)
		if !ok {
			t.Fatalf("metadata %v has no revision", r.Metadata)
		}
		revs = append(revs, rev)
	}
	if !(revs[0] < revs[1] && revs[1] < revs[2]) {
		t.Errorf("revisions %v are not increasing", revs)
	}
	groups, rev, err := tk.ActiveGroups(ctx, "s", revs[2])
	if err != nil || rev != revs[2] || len(groups) != 1 || groups[0] != "g" {
		t.Errorf("ActiveGroups = %v, %d, %v", groups, rev, err)
	}
	if tk.State() == nil {
		t.Error("State() is nil")
	}
}

// TestConcurrentCallsAndRegistration calls tools from many goroutines
// while tools are added and removed and groups switched; run with -race.
func TestConcurrentCallsAndRegistration(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
	mustAdd(t, tk, toolkit.Func("echo", "E.", func(ctx context.Context, in EchoIn) (string, error) { return in.Text, nil }))
	mustAdd(t, tk, writes("grouped", nil, toolkit.Text("g")), toolkit.InGroup("g"))

	stop := make(chan struct{})
	var churner sync.WaitGroup
	churner.Add(1)
	go func() { // churn the registry
		defer churner.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprint("tmp", i%4)
			_ = tk.Add(writes(name, nil, toolkit.Text(name)), toolkit.OnConflict(toolkit.ConflictOverride))
			tk.Remove(fmt.Sprint("tmp", (i+2)%4))
			_ = tk.Extend("echo", map[string]any{"thinking": map[string]any{"type": "string"}})
			_ = tk.Extend("echo", nil)
			_ = tk.Schemas([]string{"g"})
		}
	}()
	const callers, calls = 8, 200
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := fmt.Sprint("s", c%2)
			for i := range calls {
				id := fmt.Sprint(c, "-", i)
				var call toolkit.ToolCall
				switch i % 4 {
				case 0:
					call = toolkit.ToolCall{ID: id, Name: "echo", Input: map[string]any{"text": id}}
				case 1:
					call = toolkit.ToolCall{ID: id, Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"g": i%8 == 1}}
				case 2:
					call = toolkit.ToolCall{ID: id, Name: "grouped", Session: session}
				case 3:
					call = toolkit.ToolCall{ID: id, Name: fmt.Sprint("tmp", i%4)}
				}
				finals := 0
				for ev := range tk.Call(ctx, call) {
					if ev.Final == nil {
						continue
					}
					finals++
					if ev.Final.ID != id {
						errs <- fmt.Errorf("final id %q, want %q", ev.Final.ID, id)
						return
					}
					if call.Name == "echo" && ev.Final.Text() != id {
						errs <- fmt.Errorf("echo %q answered %q (%s)", id, ev.Final.Text(), ev.Final.Code)
						return
					}
				}
				if finals != 1 {
					errs <- fmt.Errorf("call %s: %d finals", id, finals)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	churner.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A consumer that changes the chunks it is handed does not change the
// final response.
func TestConsumerCannotChangeTheFinal(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("w", nil, chunkOf(textBlock("a", "one")), toolkit.Chunk{Content: []toolkit.Block{textBlock("a", " two")}, Metadata: map[string]any{"k": "v"}}))
	var final *toolkit.Response
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "1", Name: "w"}) {
		if ev.Chunk != nil {
			ev.Chunk.Content[0].Text = "changed"
			if ev.Chunk.Metadata != nil {
				ev.Chunk.Metadata["k"] = "changed"
			}
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final.Text() != "one two" || final.Metadata["k"] != "v" {
		t.Errorf("final = %q %v", final.Text(), final.Metadata)
	}
}

// panickyState is a GroupState whose Load panics.
type panickyState struct{ toolkit.MemoryState }

func (*panickyState) Load(context.Context, string, uint64) ([]string, uint64, bool, error) {
	panic("state exploded")
}

// TestPreludePanic: a panic before the tool runs (here in the group
// state) ends the call with an internal final instead of escaping.
func TestPreludePanic(t *testing.T) {
	tk := toolkit.New(&toolkit.Options{State: &panickyState{}})
	if err := tk.AddGroup(toolkit.Group{Name: "g", Description: "A group."}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Func("grouped", "In a group.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.InGroup("g")); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "p1", Name: "grouped", Session: "s"})
	if r.Code != toolkit.CodeInternal || r.State != toolkit.StateError || !strings.Contains(r.Text(), "state exploded") {
		t.Fatalf("final = %+v, want internal naming the panic", r)
	}
}

// TestPresetsHiddenFromMiddleware: presets are often secrets; they reach
// the tool and nothing else: middleware sees the input without them, the
// logging middleware logs no value of them.
func TestPresetsHiddenFromMiddleware(t *testing.T) {
	tk := toolkit.New(nil)
	var seen map[string]any
	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			seen = maps.Clone(call.Input)
			return next(ctx, call, w)
		}
	})
	type in struct {
		Query  string `json:"query"`
		APIKey string `json:"api_key"`
	}
	var got in
	mustAdd(t, tk, toolkit.Func("search", "Search.", func(_ context.Context, i in) (string, error) { got = i; return "ok", nil }),
		toolkit.WithPresets(map[string]any{"api_key": "sk-secret"}))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "search", Input: map[string]any{"query": "q", "api_key": "from-model"}})
	if r.State != toolkit.StateSuccess {
		t.Fatalf("%+v", r)
	}
	if got.APIKey != "sk-secret" || got.Query != "q" {
		t.Errorf("the tool got %+v, want the preset", got)
	}
	if _, ok := seen["api_key"]; ok || seen["query"] != "q" {
		t.Errorf("the middleware saw %v", seen)
	}
}

// A chunk that cannot be merged (URL data under an existing id) ends the
// call as AgentScope 2.x's append_chunk error does: the error chunk is the
// last of the output, the tool's next Write fails and nothing it writes
// after reaches the caller or the final.
func TestUnmergeableChunkEndsTheCall(t *testing.T) {
	var after error
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("url_then_more", "U.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		_ = w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "u", URL: "https://x/1"}}})
		_ = w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "u", URL: "https://x/2"}}})
		after = w.Write(toolkit.Text("after"))
		return after
	}))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "c", Name: "url_then_more"})
	if after == nil {
		t.Error("Write after the failed merge succeeded")
	}
	if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeToolError || r.final.Text() != `cannot append a data block with a URL source to block "u"` {
		t.Errorf("final = %s/%s %q", r.final.State, r.final.Code, r.final.Text())
	}
	if len(r.chunks) != 3 || r.chunks[2].State != toolkit.StateError {
		t.Errorf("chunks = %+v, want the two data chunks and the error", r.chunks)
	}
}
