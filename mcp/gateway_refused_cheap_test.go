package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// refusedPost is a POST without a session that opens none: the go-sdk
// refuses it, or answers it without a session.
type refusedPost struct {
	name   string
	header http.Header // over Content-Type: application/json and Accept: both
	body   string
	status int
}

var refusedPosts = []refusedPost{
	{"content type", http.Header{"Content-Type": {"text/plain"}}, initializeBody, http.StatusUnsupportedMediaType},
	{"accept", http.Header{"Accept": {"application/json"}}, initializeBody, http.StatusBadRequest},
	{"unknown version", http.Header{"Mcp-Protocol-Version": {"1999-01-01"}}, initializeBody, http.StatusBadRequest},
	{"stateless version", http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}, initializeBody, http.StatusBadRequest},
	{"last event id", http.Header{"Last-Event-Id": {"1"}}, initializeBody, http.StatusBadRequest},
	{"empty body", nil, "", http.StatusBadRequest},
	{"not json", nil, `{"jsonrpc":`, http.StatusBadRequest},
	{"unknown method", nil, `{"jsonrpc":"2.0","id":1,"method":"no/such"}`, http.StatusBadRequest},
	{"initialize without params", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, http.StatusBadRequest},
	{"initialize as a notification", nil, `{"jsonrpc":"2.0","method":"initialize","params":{}}`, http.StatusBadRequest},
	{"batch at 2025-06-18", http.Header{"Mcp-Protocol-Version": {"2025-06-18"}}, "[" + initializeBody + "]", http.StatusBadRequest},
	{"call before initialize", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, http.StatusOK},
	{"ping", nil, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, http.StatusOK},
	{"notification", nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted},
}

// postRefused sends p without a session to the gateway at u and checks
// its answer: p's status and no session.
func postRefused(t *testing.T, hc *http.Client, u string, p refusedPost) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(p.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range p.header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != p.status || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("%s: HTTP %d, session %q (%s), want %d and no session", p.name, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), bytes.TrimSpace(body), p.status)
	}
}

// A POST without a session that the go-sdk then refused (a content type,
// Accept or protocol version it refuses, a body that is no initialize)
// had the gateway build a session for it first, reading the session's
// groups and tools over the bus: each such request, which needs no
// token's worth of effort, cost the fleet bus traffic, and at
// MaxSessions it could end the source's least recently used session to
// make room. Only a POST that may open a session builds one.
func TestGatewayRefusedPostNoBus(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	openSession(t, u)
	var before uint64
	natstest.WaitFor(t, "the gateway to be quiet on the bus", func() bool {
		before = g.nc.Stats().OutMsgs
		time.Sleep(300 * time.Millisecond)
		return g.nc.Stats().OutMsgs == before
	})
	hc := &http.Client{Timeout: guardTimeout}
	for _, p := range refusedPosts {
		for range 3 {
			postRefused(t, hc, u, p)
		}
	}
	if n := g.nc.Stats().OutMsgs - before; n != 0 {
		t.Errorf("%d POSTs without a session that opened none sent %d messages on the bus, want none", 3*len(refusedPosts), n)
	}
	openSession(t, u) // one that may still opens
}

// At MaxSessions, a POST without a session that opens none made room for
// itself all the same: from a source holding two sessions fewer than
// another, it ended that source's least recently used session; from any
// other, it was answered 503 rather than as the go-sdk answers it.
func TestGatewayRefusedPostEndsNoSession(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxSessions: 2})
	u := serveGatewayHTTP(t, g)
	owner, stranger := fromAddress(t, "127.0.0.1"), fromAddress(t, "127.0.0.2")
	var ids []string
	for range 2 {
		code, id := rawInitialize(t, owner, u)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d", code)
		}
		ids = append(ids, id)
	}
	for _, p := range refusedPosts {
		postRefused(t, stranger, u, p)
		postRefused(t, owner, u, p)
	}
	for i, id := range ids {
		if code := rawPing(t, owner, u, id); code != http.StatusOK {
			t.Errorf("session %d's ping after POSTs that opened no session: HTTP %d, want 200", i, code)
		}
	}
}

// The id check read a POST's body (up to 4 MiB) before the go-sdk's checks
// that need none of it: a session it does not know (404), a content type
// (415), Accept or a protocol version (400) it refuses.
func TestGatewayRefusedPostBodyUnread(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	for _, tc := range []struct {
		name    string
		session string
		header  http.Header
		status  int
	}{
		{"unknown session", "nosuchsession", nil, http.StatusNotFound},
		{"content type", "", http.Header{"Content-Type": {"text/plain"}}, http.StatusUnsupportedMediaType},
		{"accept", "", http.Header{"Accept": {"text/event-stream"}}, http.StatusBadRequest},
		{"version", "", http.Header{"Mcp-Protocol-Version": {"1999-01-01"}}, http.StatusBadRequest},
		{"content type in a session", "nosuchsession", http.Header{"Content-Type": {"application/xml"}}, http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 1<<20) + `"}}}`)
			cb := &countingBody{r: bytes.NewReader(body)}
			r := httptest.NewRequest(http.MethodPost, "/mcp", cb)
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tc.session != "" {
				r.Header.Set("Mcp-Session-Id", tc.session)
			}
			for k, v := range tc.header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Errorf("HTTP %d %s, want %d", w.Code, bytes.TrimSpace(w.Body.Bytes()), tc.status)
			}
			if cb.n != 0 {
				t.Errorf("read %d bytes of the body of a POST answered %d", cb.n, w.Code)
			}
		})
	}
}

// An initialize in a batch (before protocol 2025-06-18) still opens a
// session, and one with surrounding space: the gateway tells a POST that
// may open one by the go-sdk's reading of it.
func TestGatewayBatchInitializeOpens(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	for _, body := range []string{
		" \n" + initializeBody + "\n",
		`[{"jsonrpc":"2.0","method":"notifications/initialized"}, ` + initializeBody + `]`,
	} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Timeout: guardTimeout}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Errorf("%s: HTTP %d, session %q, want a session", body, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}
	}
}

// base, which answers the requests that open no session, refuses an
// initialize should one reach it: a session of base's would be one the
// gateway neither bounds nor serves tools in.
func TestGatewayBaseRefusesInitialize(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	ct, st := sdk.NewInMemoryTransports()
	ss, err := g.base.Connect(natstest.Ctx(t), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ctx := natstest.Ctx(t)
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	req := &jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}
	if err := conn.Write(ctx, req); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil || !strings.Contains(resp.Error.Error(), "opens no session") {
		t.Errorf("base's answer to an initialize: %+v", msg)
	}
}
