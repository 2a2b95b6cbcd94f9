package main_test

// A caller in another language, written from subjects.md alone: plain
// nats.go requests, publishes and subscriptions with headers, and
// encoding/json bodies (msgpack only where subjects.md says a value is
// msgpack whatever the request: a kept result). Nothing here imports the
// project's bus, wire or toolkit packages; the structs below are the field
// lists of subjects.md, decoded strictly, so a field the worker sends and
// the contract does not name fails the test as much as a missing one.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"
)

// Frame (subjects.md: Frame, and Durable calls for the attempt fields).
type fFrame struct {
	Kind        string     `json:"kind"`
	ID          string     `json:"id"`
	Seq         uint64     `json:"seq"`
	Chunk       *fChunk    `json:"chunk"`
	More        []fChunk   `json:"more"`
	Progress    *fProgress `json:"progress"`
	Log         *fLog      `json:"log"`
	Ask         *fAsk      `json:"ask"`
	Final       *fResponse `json:"final"`
	Chunks      uint64     `json:"chunks"`
	Attempt     uint64     `json:"attempt"`
	MaxAttempts uint64     `json:"max_attempts"`
	RedeliverMS uint64     `json:"redeliver_ms"`
}

type fChunk struct {
	Content  []fBlock       `json:"content"`
	State    string         `json:"state"`
	Metadata map[string]any `json:"metadata"`
}

type fBlock struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Text      string `json:"text"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
	Name      string `json:"name"`
}

type fProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

type fLog struct {
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Data   any    `json:"data"`
}

type fAsk struct {
	Method string `json:"method"`
	Params any    `json:"params"`
	Reply  string `json:"reply"`
}

type fResponse struct {
	ID       string         `json:"id"`
	State    string         `json:"state"`
	Code     string         `json:"code"`
	Content  []fBlock       `json:"content"`
	Metadata map[string]any `json:"metadata"`
}

// text is the response's text blocks, joined.
func (r *fResponse) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// Listing tools (subjects.md: Listing tools).
type fListReply struct {
	Worker  string            `json:"worker"`
	Tools   []string          `json:"tools"`
	Schemas []fFunctionSchema `json:"schemas"`
	Error   string            `json:"error"`
}

type fFunctionSchema struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

func (l fListReply) schemaNames() []string {
	var names []string
	for _, s := range l.Schemas {
		names = append(names, s.Function.Name)
	}
	return names
}

// Announcement (subjects.md: Discovery).
type fAnnouncement struct {
	V           int            `json:"v"`
	Instance    string         `json:"instance"`
	Version     string         `json:"version"`
	Queue       string         `json:"queue"`
	Incarnation string         `json:"incarnation"`
	EpochMS     int64          `json:"epoch_ms"`
	Seq         uint64         `json:"seq"`
	IntervalMS  int64          `json:"interval_ms"`
	Goodbye     bool           `json:"goodbye"`
	Groups      []fGroup       `json:"groups"`
	Tools       []fTool        `json:"tools"`
	Meta        map[string]any `json:"meta"`
}

type fGroup struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Instructions string `json:"instructions"`
	Active       bool   `json:"active"`
}

type fTool struct {
	Name            string         `json:"name"`
	Description     string         `json:"description"`
	Group           string         `json:"group"`
	ReadOnly        bool           `json:"read_only"`
	ConcurrencySafe bool           `json:"concurrency_safe"`
	Idempotency     string         `json:"idempotency"`
	Parameters      map[string]any `json:"parameters"`
	Order           []any          `json:"order"`
	Conditional     bool           `json:"conditional"`
	ListedWith      []string       `json:"listed_with"`
	Kind            string         `json:"kind"`
}

// strict decodes one JSON value into v, refusing fields subjects.md does
// not name and trailing bytes.
func strict(t testing.TB, what string, data []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, data)
	}
	if d.More() {
		t.Fatalf("%s: more than one value\n%s", what, data)
	}
}

// foreignCaller is the minimal client of subjects.md's worked example: one
// wildcard subscription on its inbox made before any call, frames routed by
// the reply subject's last token.
type foreignCaller struct {
	t     *testing.T
	nc    *nats.Conn
	inbox string // _INBOX.<random>

	mu     sync.Mutex
	next   int
	routes map[string]chan *nats.Msg
	ended  map[string]bool // tokens whose final arrived
	after  []string        // messages that followed a final
}

func newForeignCaller(t *testing.T, url, identity string) *foreignCaller {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	inbox := nats.NewInbox()
	if identity != "" {
		inbox = "_INBOX." + identity + "." + nats.NewInbox()[len("_INBOX."):]
	}
	c := &foreignCaller{t: t, nc: nc, inbox: inbox, routes: map[string]chan *nats.Msg{}, ended: map[string]bool{}}
	if _, err := nc.Subscribe(c.inbox+".*", c.route); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, m := range c.after {
			t.Errorf("a message followed its call's final: %s", m)
		}
	})
	return c
}

func (c *foreignCaller) route(m *nats.Msg) {
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended[token] {
		c.after = append(c.after, string(m.Data))
		return
	}
	ch := c.routes[token]
	if ch == nil {
		return
	}
	var f struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(m.Data, &f) == nil && f.Kind == "final" {
		c.ended[token] = true
	}
	ch <- m
}

// reply is a fresh reply subject under the inbox and the channel its
// messages arrive on.
func (c *foreignCaller) reply() (string, chan *nats.Msg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	token := "r" + strconv.Itoa(c.next)
	ch := make(chan *nats.Msg, 4096)
	c.routes[token] = ch
	return c.inbox + "." + token, ch
}

// jsonHeader is a request's headers: Content-Type selects JSON, plus kv
// pairs.
func jsonHeader(kv ...string) nats.Header {
	h := nats.Header{}
	h.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// publish sends a call and returns the channel its replies arrive on.
// cancel publishes a cancel as subjects.md says: the body empty or
// "deadline", with the header Toolbus-Version: 1.
func (c *foreignCaller) cancel(subject, body string) {
	c.nc.PublishMsg(&nats.Msg{Subject: subject, Header: nats.Header{"Toolbus-Version": {"1"}}, Data: []byte(body)})
}

func (c *foreignCaller) publish(subject string, h nats.Header, body string) chan *nats.Msg {
	c.t.Helper()
	reply, ch := c.reply()
	if err := c.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: h, Data: []byte(body)}); err != nil {
		c.t.Fatal(err)
	}
	return ch
}

// call publishes a call and reads its frames to the final.
func (c *foreignCaller) call(subject string, h nats.Header, body string) []fFrame {
	c.t.Helper()
	return c.frames(c.publish(subject, h, body), nil)
}

// frames reads one call's frames until its final, checking what every
// caller checks: JSON replies say so, seq grows by one per frame and per
// chunk (a frame with more covers seq..seq+len(more)), exactly one of the
// payloads per kind. each, when not nil, sees every frame as it comes.
func (c *foreignCaller) frames(ch chan *nats.Msg, each func(fFrame)) []fFrame {
	c.t.Helper()
	var out []fFrame
	next := uint64(1)
	deadline := time.After(guard)
	for {
		var m *nats.Msg
		select {
		case m = <-ch:
		case <-deadline:
			c.t.Fatalf("no final within %v; frames so far: %+v", guard, out)
		}
		if ct := m.Header.Get("Content-Type"); ct != "application/json" {
			c.t.Fatalf("a reply to a JSON request has Content-Type %q (status %q): %s", ct, m.Header.Get("Status"), m.Data)
		}
		var f fFrame
		strict(c.t, "frame", m.Data, &f)
		if f.Seq != next {
			c.t.Errorf("frame %s: seq %d, want %d", m.Data, f.Seq, next)
		}
		next = f.Seq + uint64(len(f.More)) + 1
		payloads := 0
		for _, set := range []bool{f.Chunk != nil, f.Progress != nil, f.Log != nil, f.Ask != nil, f.Final != nil} {
			if set {
				payloads++
			}
		}
		want := 1
		if f.Kind == "heartbeat" || f.Kind == "queued" {
			want = 0
		}
		if payloads != want || (len(f.More) > 0 && f.Kind != "chunk") {
			c.t.Errorf("frame %s: %d payloads, want %d", m.Data, payloads, want)
		}
		if each != nil {
			each(f)
		}
		out = append(out, f)
		if f.Kind == "final" {
			return out
		}
	}
}

// result is what a caller makes of a call's frames (subjects.md, Sequence
// and final rules 4 and Accumulation): the final, with the content and
// metadata rebuilt from the chunks when it counts any.
func result(t testing.TB, frames []fFrame) (final fResponse, chunks int) {
	t.Helper()
	last := frames[len(frames)-1]
	if last.Final == nil {
		t.Fatalf("the last frame is %q, not a final", last.Kind)
	}
	final = *last.Final
	var acc fChunk
	for _, f := range frames {
		if f.Kind != "chunk" {
			continue
		}
		for _, ck := range append([]fChunk{*f.Chunk}, f.More...) {
			chunks++
			acc.Content = appendBlocks(acc.Content, ck.Content)
			for k, v := range ck.Metadata {
				if acc.Metadata == nil {
					acc.Metadata = map[string]any{}
				}
				acc.Metadata[k] = v
			}
		}
	}
	if uint64(chunks) != last.Chunks {
		t.Errorf("the final counts %d chunks; %d arrived", last.Chunks, chunks)
	}
	if chunks == 0 {
		return final, 0
	}
	if len(final.Content) > 0 {
		t.Errorf("a final after chunks has content %+v; rule 4 says none", final.Content)
	}
	final.Content = acc.Content
	for k, v := range final.Metadata {
		if acc.Metadata == nil {
			acc.Metadata = map[string]any{}
		}
		acc.Metadata[k] = v
	}
	final.Metadata = acc.Metadata
	return final, chunks
}

// appendBlocks is AgentScope's append_chunk for the text blocks these
// tools write: blocks with the same id merge, consecutive text blocks merge
// into the first, others are appended.
func appendBlocks(acc, add []fBlock) []fBlock {
	for _, b := range add {
		n := len(acc)
		switch {
		case b.ID != "" && slices.ContainsFunc(acc, func(a fBlock) bool { return a.ID == b.ID }):
			i := slices.IndexFunc(acc, func(a fBlock) bool { return a.ID == b.ID })
			acc[i].Text += b.Text
		case b.Type == "text" && n > 0 && acc[n-1].Type == "text":
			acc[n-1].Text += b.Text
		default:
			acc = append(acc, b)
		}
	}
	return acc
}

// list asks tools.list (JSON) for a session's view.
func (c *foreignCaller) list(h nats.Header, body string) fListReply {
	c.t.Helper()
	m, err := c.nc.RequestMsg(&nats.Msg{Subject: "tools.list", Header: h, Data: []byte(body)}, guard)
	if err != nil {
		c.t.Fatalf("tools.list: %v", err)
	}
	if ct := m.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Errorf("tools.list reply Content-Type %q", ct)
	}
	var l fListReply
	strict(c.t, "list reply", m.Data, &l)
	return l
}

// TestForeignCaller drives a real worker as a caller in another language
// would, from subjects.md only, over the worker's own embedded server.
func TestForeignCaller(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "worker.yaml")
	mustWrite(t, cfg, `groups:
  - name: exec
    description: Run shell commands.
    instructions: Keep commands short.
builtins:
  workspace: `+filepath.Join(root, "ws")+`
  tools:
    - name: echo
    - name: sleep
    - name: execute_shell_command
`)
	w := startWorker(t, "--config", cfg)
	c := newForeignCaller(t, w.url, "")
	// Broadcast announcements come every interval (2 s); the discovery
	// test below reads the first one that came meanwhile.
	announced := make(chan *nats.Msg, 64)
	if _, err := c.nc.ChanSubscribe("tools.announce."+w.instance, announced); err != nil {
		t.Fatal(err)
	}

	t.Run("plain", func(t *testing.T) {
		c.t = t
		frames := c.call("tools.call.echo", jsonHeader(), `{"id":"plain-1","input":{"text":"hi"}}`)
		if len(frames) != 1 {
			t.Fatalf("a fast call sent %d messages, want its final only: %+v", len(frames), frames)
		}
		f := frames[0]
		if f.Kind != "final" || f.ID != "plain-1" || f.Chunks != 0 || f.Final.ID != "plain-1" ||
			f.Final.State != "success" || f.Final.Code != "" || f.Final.text() != "hi" || f.Final.Metadata["worker"] != w.instance {
			t.Errorf("final %+v, want success with hi from %s", f.Final, w.instance)
		}
		// The worked examples, byte for byte but the worker's name.
		for _, ex := range []struct{ request, reply string }{
			{`{"id":"c1","input":{"text":"hi"}}`,
				`{"kind":"final","id":"c1","seq":1,"final":{"id":"c1","state":"success","content":[{"type":"text","text":"hi"}],"metadata":{"worker":"w1"}}}`},
			{`{"input":{"text":"hi"}}`,
				`{"kind":"final","id":"","seq":1,"final":{"id":"","state":"error","code":"invalid_input","content":[{"type":"text","text":"BadRequestError: the request has no call id; set \"id\" (one token of [A-Za-z0-9_-], unique per call)."}],"metadata":{"worker":"w1"}}}`},
		} {
			ch := c.publish("tools.call.echo", jsonHeader(), ex.request)
			select {
			case m := <-ch:
				if want := strings.Replace(ex.reply, `"worker":"w1"`, `"worker":"`+w.instance+`"`, 1); string(m.Data) != want {
					t.Errorf("worked example %s:\n got %s\nwant %s", ex.request, m.Data, want)
				}
			case <-time.After(guard):
				t.Fatalf("no reply to %s", ex.request)
			}
		}
		// Content-Type is matched on its prefix.
		frames = c.call("tools.call.echo", jsonHeader("Content-Type", "application/json; charset=utf-8"), `{"id":"plain-2","input":{"text":"hi"}}`)
		if fin, _ := result(t, frames); fin.State != "success" || fin.text() != "hi" {
			t.Errorf("charset request: %+v", fin)
		}
	})

	t.Run("errors", func(t *testing.T) {
		c.t = t
		for _, tc := range []struct {
			name, subject, body string
			header              nats.Header
			id                  string // the final's
			code                string
			text                string // in the final's text
		}{
			{"invalid input", "tools.call.echo", `{"id":"bad-1","input":{"text":5}}`, jsonHeader(), "bad-1", "invalid_input", "Input validation failed for tool 'echo': validating /properties/text"},
			{"missing input", "tools.call.echo", `{"id":"bad-2"}`, jsonHeader(), "bad-2", "invalid_input", "Input validation failed for tool 'echo': required"},
			{"undecodable body", "tools.call.echo", `{"id":"bad-3",`, jsonHeader(), "", "invalid_input", ""},
			{"trailing bytes", "tools.call.echo", `{"id":"bad-4","input":{"text":"x"}} {}`, jsonHeader(), "", "invalid_input", ""},
			{"no id", "tools.call.echo", `{"input":{"text":"hi"}}`, jsonHeader(), "", "invalid_input",
				`BadRequestError: the request has no call id; set "id" (one token of [A-Za-z0-9_-], unique per call).`},
			{"id not a token", "tools.call.echo", `{"id":"a.b","input":{"text":"hi"}}`, jsonHeader(), "a.b", "invalid_input", `the call id "a.b" is invalid`},
			{"name differs", "tools.call.echo", `{"id":"bad-5","name":"sleep","input":{"text":"hi"}}`, jsonHeader(), "bad-5", "invalid_input", "sleep"},
			{"unknown version", "tools.call.echo", `{"id":"bad-6","input":{"text":"hi"}}`, jsonHeader("Toolbus-Version", "2"), "", "invalid_input", "Toolbus-Version"},
			{"bad heartbeat", "tools.call.echo", `{"id":"bad-7","input":{"text":"hi"}}`, jsonHeader("Toolbus-Heartbeat", "soon"), "bad-7", "invalid_input", "Toolbus-Heartbeat"},
			{"bad timeout", "tools.call.echo", `{"id":"bad-8","input":{"text":"hi"}}`, jsonHeader("Toolbus-Timeout", "1s"), "bad-8", "invalid_input", "Toolbus-Timeout"},
			{"bad revision", "tools.call.echo", `{"id":"bad-9","input":{"text":"hi"}}`, jsonHeader("Toolbus-Groups-Revision", "-1"), "bad-9", "invalid_input", "Toolbus-Groups-Revision"},
			{"key not a token", "tools.call.echo", `{"id":"bad-11","key":"a.b","input":{"text":"hi"}}`, jsonHeader(), "bad-11", "invalid_input", `idempotency key "a.b"`},
			{"timeout not an integer", "tools.call.echo", `{"id":"bad-12","input":{"text":"hi"}}`, jsonHeader("Toolbus-Timeout", "1500.0"), "bad-12", "invalid_input", "Toolbus-Timeout"},
			{"reset_tools: unknown group", "tools.call.reset_tools", `{"id":"bad-13","session":"s9","input":{"web":true}}`, jsonHeader(), "bad-13", "invalid_input", "Invalid group name(s): web"},
			{"reset_tools: not a boolean", "tools.call.reset_tools", `{"id":"bad-14","session":"s9","input":{"exec":"yes"}}`, jsonHeader(), "bad-14", "invalid_input", "should be a bool value"},
			{"no time left", "tools.call.echo", `{"id":"bad-10","input":{"text":"hi"}}`, jsonHeader("Toolbus-Timeout", "0"), "bad-10", "timeout", ""},
		} {
			frames := c.call(tc.subject, tc.header, tc.body)
			f := frames[len(frames)-1]
			if len(frames) != 1 || f.ID != tc.id || f.Final.ID != tc.id || f.Final.State != "error" || f.Final.Code != tc.code ||
				!strings.Contains(f.Final.text(), tc.text) || f.Final.Metadata["worker"] != w.instance {
				t.Errorf("%s: %d frames, last id %q: %+v; want one final, id %q, error %s with %q", tc.name, len(frames), f.ID, f.Final, tc.id, tc.code, tc.text)
			}
		}
		// The worker keeps serving after each of these.
		if f, _ := result(t, c.call("tools.call.echo", jsonHeader(), `{"id":"after-bad","input":{"text":"ok"}}`)); f.text() != "ok" {
			t.Errorf("after the bad requests: %+v", f)
		}

		// An unknown tool: nobody subscribes its subject, so the server
		// answers with a no-responders status; tools.list without the tool
		// makes it not_found.
		ch := c.publish("tools.call.no_such_tool", jsonHeader(), `{"id":"nf-1","input":{}}`)
		select {
		case m := <-ch:
			if m.Header.Get("Status") != "503" || len(m.Data) != 0 {
				t.Errorf("unknown tool: status %q, body %q; want 503, empty", m.Header.Get("Status"), m.Data)
			}
		case <-time.After(guard):
			t.Fatal("no no-responders status for an unknown tool")
		}
		if l := c.list(jsonHeader("Toolbus-Version", "2"), ``); !strings.Contains(l.Error, "Toolbus-Version") || len(l.Tools) != 0 {
			t.Errorf("tools.list of another version: %+v", l)
		}
		if l := c.list(jsonHeader(), ``); slices.Contains(l.Tools, "no_such_tool") || !slices.Contains(l.Tools, "echo") || l.Worker != w.instance {
			t.Errorf("tools.list: %+v", l)
		}
	})

	var revision string // of session s1's reset_tools
	t.Run("groups", func(t *testing.T) {
		c.t = t
		l := c.list(jsonHeader(), `{"session":"s1"}`)
		if !slices.Contains(l.Tools, "reset_tools") || !slices.Contains(l.Tools, "execute_shell_command") {
			t.Errorf("tools.list tools: %v", l.Tools)
		}
		if got := l.schemaNames(); !slices.Equal(got, []string{"reset_tools", "echo", "sleep"}) {
			t.Errorf("schemas before activation: %v", got)
		}

		frames := c.call("tools.call.execute_shell_command", jsonHeader(), `{"id":"g-1","session":"s1","input":{"command":"true"}}`)
		if f := frames[len(frames)-1].Final; f.State != "error" || f.Code != "group_inactive" {
			t.Errorf("a call in an inactive group: %+v", f)
		}
		frames = c.call("tools.call.reset_tools", jsonHeader(), `{"id":"g-2","input":{"exec":true}}`)
		if f := frames[len(frames)-1].Final; f.State != "error" || f.Code != "invalid_input" {
			t.Errorf("reset_tools without a session: %+v", f)
		}
		frames = c.call("tools.call.reset_tools", jsonHeader(), `{"id":"g-3","session":"s1","input":{"exec":true}}`)
		f, _ := result(t, frames)
		rev, ok := f.Metadata["groups_revision"].(float64)
		if f.State != "success" || !ok || rev < 1 || fmt.Sprint(f.Metadata["active_groups"]) != "[exec]" ||
			!strings.Contains(f.text(), "The currently activated tool group(s): exec.") || !strings.Contains(f.text(), "Keep commands short.") {
			t.Fatalf("reset_tools: %+v", f)
		}
		revision = strconv.FormatFloat(rev, 'f', -1, 64)

		l = c.list(jsonHeader("Toolbus-Groups-Revision", revision), `{"session":"s1"}`)
		if got := l.schemaNames(); !slices.Equal(got, []string{"reset_tools", "echo", "sleep", "execute_shell_command"}) {
			t.Errorf("schemas after activation: %v", got)
		}
		if got := c.list(jsonHeader(), `{"session":"s2"}`).schemaNames(); slices.Contains(got, "execute_shell_command") {
			t.Errorf("session s2 sees s1's group: %v", got)
		}
		frames = c.call("tools.call.execute_shell_command", jsonHeader(), `{"id":"g-4","session":"s2","input":{"command":"true"}}`)
		if f := frames[len(frames)-1].Final; f.Code != "group_inactive" {
			t.Errorf("s2's call: %+v", f)
		}
	})

	t.Run("stream", func(t *testing.T) {
		c.t = t
		if revision == "" {
			t.Skip("no group activation")
		}
		const command = `printf 'one\n'; sleep 0.2; printf 'two\n'; sleep 0.2; printf 'three\n'`
		for _, more := range []bool{false, true} {
			id := fmt.Sprintf("stream-%t", more)
			body, _ := json.Marshal(map[string]any{"id": id, "session": "s1", "more": more, "input": map[string]any{"command": command}})
			frames := c.call("tools.call.execute_shell_command", jsonHeader("Toolbus-Groups-Revision", revision), string(body))
			for _, f := range frames {
				if !more && len(f.More) > 0 {
					t.Errorf("more in a frame to a request without it: %+v", f)
				}
			}
			f, chunks := result(t, frames)
			if f.State != "success" || f.text() != "one\ntwo\nthree\n<returncode>0</returncode>" || f.Metadata["exit_code"] != 0.0 ||
				f.Metadata["worker"] != w.instance || f.Metadata["session_worker"] != w.instance {
				t.Errorf("more %t: rebuilt %+v from %d chunks", more, f, chunks)
			}
		}
	})

	t.Run("heartbeat and cancel", func(t *testing.T) {
		c.t = t
		for _, tc := range []struct{ body, state, code string }{
			{"", "interrupted", "interrupted"},
			{"deadline", "error", "timeout"},
		} {
			id := "cancel-" + tc.code
			ch := c.publish("tools.call.sleep", jsonHeader("Toolbus-Heartbeat", "20"), `{"id":"`+id+`","input":{"seconds":30}}`)
			heartbeats := 0
			frames := c.frames(ch, func(f fFrame) {
				if f.Kind == "heartbeat" {
					if f.ID != id {
						t.Errorf("heartbeat of %q", f.ID)
					}
					if heartbeats++; heartbeats == 2 {
						c.cancel("tools.cancel."+id, tc.body)
					}
				}
			})
			f := frames[len(frames)-1].Final
			if heartbeats < 2 || f.ID != id || f.State != tc.state || f.Code != tc.code {
				t.Errorf("cancel %q: %d heartbeats, final %+v; want %s/%s", tc.body, heartbeats, f, tc.state, tc.code)
			}
		}

		// sleep reports progress every second; a progress frame is never
		// part of the result.
		ch := c.publish("tools.call.sleep", jsonHeader(), `{"id":"progress-1","input":{"seconds":30}}`)
		var progress *fProgress
		frames := c.frames(ch, func(f fFrame) {
			if f.Kind == "progress" && progress == nil {
				progress = f.Progress
				c.cancel("tools.cancel.progress-1", "")
			}
		})
		if progress == nil || progress.Total != 30 || progress.Progress < 1 || !strings.HasPrefix(progress.Message, "slept ") {
			t.Errorf("progress %+v", progress)
		}
		// A burst went out (the progress), so the notice comes as a chunk
		// and the final counts it.
		if f, chunks := result(t, frames); f.Code != "interrupted" || chunks != 1 ||
			f.text() != "<system-reminder>The tool call has been interrupted by the user.</system-reminder>" {
			t.Errorf("interrupted after progress: %+v from %d chunks", f, chunks)
		}

		// A cancel that overtakes its call: the tombstone answers it.
		c.cancel("tools.cancel.early-1", "")
		c.nc.Flush()
		frames = c.call("tools.call.sleep", jsonHeader(), `{"id":"early-1","input":{"seconds":30}}`)
		if f := frames[len(frames)-1].Final; f.Code != "interrupted" {
			t.Errorf("a tombstoned call: %+v", f)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		c.t = t
		frames := c.call("tools.call.sleep", jsonHeader("Toolbus-Timeout", "200"), `{"id":"deadline-1","input":{"seconds":30}}`)
		if f := frames[len(frames)-1].Final; f.State != "error" || f.Code != "timeout" {
			t.Errorf("an expired deadline: %+v", f)
		}
		frames = c.call("tools.call.sleep", jsonHeader("Toolbus-Timeout", "60000"), `{"id":"deadline-2","input":{"seconds":0.05}}`)
		if f, _ := result(t, frames); f.State != "success" || f.text() != "Slept for 0.05 seconds." {
			t.Errorf("within its deadline: %+v", f)
		}
	})

	t.Run("kept result", func(t *testing.T) {
		c.t = t
		frames := c.call("tools.call.echo", jsonHeader("Toolbus-Keep-Result", "1"), `{"id":"kept-1","input":{"text":"kept"}}`)
		// The kept final's write to the KV can outlast the worker's timed
		// flush on a loaded machine: the content then comes as a chunk.
		if f, _ := result(t, frames); f.text() != "kept" {
			t.Fatalf("kept call: %+v", f)
		}
		kept := c.keptResult("kept-1", "kept-1")
		if kept.ID != "kept-1" || kept.State != "success" || kept.text() != "kept" || kept.Metadata["worker"] != w.instance {
			t.Errorf("kept result %+v", kept)
		}
		// Nothing kept under an id never called.
		m, err := c.nc.Request("$JS.API.DIRECT.GET.KV_toolbus_results.$KV.toolbus_results.never-called", nil, guard)
		if err != nil || m.Header.Get("Status") != "404" || len(m.Data) != 0 {
			t.Errorf("an id with nothing kept: %v, status %q, body %q", err, m.Header.Get("Status"), m.Data)
		}
	})

	t.Run("durable", func(t *testing.T) {
		c.t = t
		// Before publishing, whether a worker takes the tool's durable
		// calls: its consumer of the calls stream.
		for tool, want := range map[string]bool{"echo": true, "no_such_tool": false} {
			m, err := c.nc.Request("$JS.API.CONSUMER.INFO.toolbus_calls."+tool, nil, guard)
			if err != nil {
				t.Fatal(err)
			}
			var info struct {
				Name  string `json:"name"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(m.Data, &info); err != nil || (info.Name == tool) != want || (info.Error != nil && info.Error.Code != 404) {
				t.Errorf("consumer of %s: %v, %s", tool, err, m.Data)
			}
		}
		reply, ch := c.reply()
		msg := &nats.Msg{Subject: "tools.durable.echo", Header: jsonHeader("Toolbus-Reply", reply, "Nats-Msg-Id", "durable-1"),
			Data: []byte(`{"id":"durable-1","input":{"text":"stored"}}`)}
		ack, err := c.nc.RequestMsg(msg, guard)
		if err != nil {
			t.Fatal(err)
		}
		var pa struct {
			Stream    string `json:"stream"`
			Seq       uint64 `json:"seq"`
			Duplicate bool   `json:"duplicate"`
		}
		if err := json.Unmarshal(ack.Data, &pa); err != nil || pa.Stream != "toolbus_calls" || pa.Seq == 0 || pa.Duplicate {
			t.Fatalf("acknowledgement %s: %v", ack.Data, err)
		}
		frames := c.frames(ch, nil)
		f := frames[len(frames)-1]
		if r, _ := result(t, frames); r.State != "success" || r.text() != "stored" || f.Attempt != 1 || f.MaxAttempts == 0 || f.RedeliverMS == 0 {
			t.Errorf("durable final %+v (attempt %d of %d, redeliver %d ms)", r, f.Attempt, f.MaxAttempts, f.RedeliverMS)
		}
		if kept := c.keptResult("durable-1", "durable-1"); kept.text() != "stored" {
			t.Errorf("the durable call's kept final: %+v", kept)
		}
		// A durable call's cancel goes to the workers and, for a worker
		// that takes the call from the queue later, into the cancels
		// stream.
		reply, ch = c.reply()
		msg2 := &nats.Msg{Subject: "tools.durable.sleep", Header: jsonHeader("Toolbus-Reply", reply, "Nats-Msg-Id", "durable-2", "Toolbus-Heartbeat", "20"),
			Data: []byte(`{"id":"durable-2","input":{"seconds":30}}`)}
		if _, err := c.nc.RequestMsg(msg2, guard); err != nil {
			t.Fatal(err)
		}
		frames = c.frames(ch, func(f fFrame) {
			if f.Attempt != 1 {
				t.Errorf("a durable frame of attempt %d: %+v", f.Attempt, f)
			}
			if f.Kind == "heartbeat" && f.Seq == 1 {
				c.cancel("tools.cancel.durable-2", "")
				ack, err := c.nc.RequestMsg(&nats.Msg{Subject: "tools.cancelled.durable-2", Header: nats.Header{"Toolbus-Version": {"1"}}}, guard)
				if err != nil || json.Unmarshal(ack.Data, &pa) != nil || pa.Stream != "toolbus_cancels" {
					t.Errorf("the cancel's record: %v, %s", err, ack.Data)
				}
			}
		})
		if f := frames[len(frames)-1]; f.Final.Code != "interrupted" || f.Attempt != 1 {
			t.Errorf("a cancelled durable call: %+v (attempt %d)", f.Final, f.Attempt)
		}
		if kept := c.keptResult("durable-2", "durable-2"); kept.Code != "interrupted" {
			t.Errorf("its kept final: %+v", kept)
		}

		// The same id again within the duplicates window is stored once.
		ack, err = c.nc.RequestMsg(msg, guard)
		if err != nil || json.Unmarshal(ack.Data, &pa) != nil || !pa.Duplicate {
			t.Errorf("the same call again: %v, %s", err, ack.Data)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		c.t = t
		m, err := c.nc.RequestMsg(&nats.Msg{Subject: "tools.discover", Header: jsonHeader()}, guard)
		if err != nil {
			t.Fatal(err)
		}
		if ct := m.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("discover reply Content-Type %q", ct)
		}
		var a fAnnouncement
		strict(t, "announcement", m.Data, &a)
		var tools []string
		for _, tl := range a.Tools {
			tools = append(tools, tl.Name+"/"+tl.Group)
			if tl.Parameters["type"] != "object" || tl.Idempotency == "" {
				t.Errorf("announced tool %+v", tl)
			}
		}
		if a.V != 1 || a.Instance != w.instance || a.Seq == 0 || a.EpochMS == 0 || a.Incarnation == "" || len(a.Incarnation) > 64 || a.Queue != "toolbus" || a.Meta["durable"] != true ||
			len(a.Groups) != 1 || a.Groups[0].Name != "exec" || a.Groups[0].Description == "" ||
			!slices.Equal(tools, []string{"echo/basic", "sleep/basic", "execute_shell_command/exec"}) {
			t.Errorf("announcement %+v (tools %v)", a, tools)
		}

		select {
		case m := <-announced:
			var b fAnnouncement
			if ct := m.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("broadcast Content-Type %q", ct)
			}
			strict(t, "broadcast announcement", m.Data, &b)
			if b.Instance != w.instance || b.Incarnation != a.Incarnation || b.EpochMS != a.EpochMS || b.IntervalMS != 2000 || len(b.Tools) != len(a.Tools) {
				t.Errorf("broadcast %+v, discover reply %+v", b, a)
			}
		case <-time.After(guard):
			t.Errorf("no announcement on tools.announce.%s", w.instance)
		}
	})

	t.Run("services", func(t *testing.T) {
		c.t = t
		m, err := c.nc.Request("$SRV.INFO.toolbus."+w.instance, nil, guard)
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			ID        string `json:"id"`
			Endpoints []struct {
				Name       string `json:"name"`
				Subject    string `json:"subject"`
				QueueGroup string `json:"queue_group"`
			} `json:"endpoints"`
		}
		if err := json.Unmarshal(m.Data, &info); err != nil {
			t.Fatalf("%v: %s", err, m.Data)
		}
		var endpoints []string
		for _, e := range info.Endpoints {
			endpoints = append(endpoints, e.Name+" "+e.Subject+" "+e.QueueGroup)
		}
		slices.Sort(endpoints)
		want := []string{"echo tools.call.echo toolbus", "execute_shell_command tools.call.execute_shell_command toolbus",
			"reset_tools tools.call.reset_tools toolbus", "sleep tools.call.sleep toolbus"}
		if info.Type != "io.nats.micro.v1.info_response" || info.Name != "toolbus" || info.ID != w.instance || !slices.Equal(endpoints, want) {
			t.Errorf("INFO %s", m.Data)
		}
	})

	t.Run("pinned", func(t *testing.T) {
		c.t = t
		if revision == "" {
			t.Skip("no group activation")
		}
		// The probe: an empty request, an empty reply while the worker lives.
		m, err := c.nc.Request("tools.pinned."+w.instance, nil, guard)
		if err != nil || len(m.Data) != 0 {
			t.Fatalf("probe: %v, %q", err, m.Data)
		}
		// s1's calls of a session-bound tool straight to the worker its
		// finals name.
		frames := c.call("tools.pinned."+w.instance+".execute_shell_command", jsonHeader("Toolbus-Groups-Revision", revision),
			`{"id":"pinned-1","session":"s1","input":{"command":"printf pinned"}}`)
		if f, _ := result(t, frames); f.State != "success" || f.text() != "pinned\n<returncode>0</returncode>" || f.Metadata["session_worker"] != w.instance {
			t.Errorf("a pinned call: %+v", f)
		}
	})

	t.Run("identity", func(t *testing.T) {
		alice := newForeignCaller(t, w.url, "alice")
		frames := alice.call("tools.call.echo.alice", jsonHeader("Toolbus-Keep-Result", "1"), `{"id":"id-1","input":{"text":"alice's"}}`)
		if f, _ := result(t, frames); f.State != "success" || f.text() != "alice's" {
			t.Errorf("a call as alice: %+v", f)
		}
		if kept := alice.keptResult("alice.id-1", "id-1"); kept.text() != "alice's" {
			t.Errorf("alice's kept result: %+v", kept)
		}
		// alice's session s1 is not the anonymous s1: exec is off there.
		frames = alice.call("tools.call.execute_shell_command.alice", jsonHeader(), `{"id":"id-2","session":"s1","input":{"command":"true"}}`)
		if f := frames[len(frames)-1].Final; f.Code != "group_inactive" {
			t.Errorf("alice's s1: %+v", f)
		}
		// A cancel on alice's subject reaches alice's call.
		ch := alice.publish("tools.call.sleep.alice", jsonHeader("Toolbus-Heartbeat", "20"), `{"id":"id-3","input":{"seconds":30}}`)
		frames = alice.frames(ch, func(f fFrame) {
			if f.Kind == "heartbeat" && f.Seq == 1 {
				alice.cancel("tools.cancel.alice.id-3", "")
			}
		})
		if f := frames[len(frames)-1].Final; f.Code != "interrupted" {
			t.Errorf("alice's cancelled call: %+v", f)
		}
	})
}

// keptResult reads a kept final from the results bucket the way subjects.md
// says a caller may: a direct get of its key; the value is a final frame in
// msgpack whatever the request's encoding.
func (c *foreignCaller) keptResult(key, id string) fResponse {
	c.t.Helper()
	subject := "$JS.API.DIRECT.GET.KV_toolbus_results.$KV.toolbus_results." + key
	var m *nats.Msg
	// A durable call's final reaches the bucket without the worker waiting
	// for it: look again for a moment (as Client.Result does).
	for deadline := time.Now().Add(guard); ; {
		var err error
		m, err = c.nc.Request(subject, nil, guard)
		if err != nil {
			c.t.Fatalf("%s: %v", subject, err)
		}
		if m.Header.Get("Status") != "404" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := m.Header.Get("Status"); s != "" {
		c.t.Fatalf("%s: status %s %s", subject, s, m.Header.Get("Description"))
	}
	var f struct {
		Kind  string    `msgpack:"kind"`
		ID    string    `msgpack:"id"`
		Seq   uint64    `msgpack:"seq"`
		Final fResponse `msgpack:"final"`
	}
	d := msgpack.NewDecoder(bytes.NewReader(m.Data))
	d.SetCustomStructTag("json")
	if err := d.Decode(&f); err != nil || f.Kind != "final" || f.ID != id {
		c.t.Fatalf("kept value of %s: %v, %+v", key, err, f)
	}
	return f.Final
}
