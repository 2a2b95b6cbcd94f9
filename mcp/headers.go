package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// checkHeaders validates header names (RFC 9110 tokens, not reserved) and
// values (visible ASCII, space or tab).
func checkHeaders(h map[string]string) error {
	for k, v := range h {
		if !isToken(k) {
			return fmt.Errorf("header name %q is not a valid HTTP token", k)
		}
		if slices.Contains(reservedHeaders, strings.ToLower(k)) {
			return fmt.Errorf("header %q is managed by the HTTP or MCP transport and cannot be set", k)
		}
		for i := 0; i < len(v); i++ {
			if c := v[i]; c != '\t' && (c < 0x20 || c == 0x7f) {
				return fmt.Errorf("header %q: value contains a control character", k)
			}
		}
	}
	return nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// headerTransport is the http.RoundTripper under every HTTP MCP session of
// a Client. It sets the static and runtime headers on each request and
// taps event-stream bodies for progress notifications (see tap.go). It
// sends requests to the configured server's origin only: a legacy SSE
// server may name its message endpoint by an absolute URL, and any
// server may redirect, and neither may send the worker (with the
// configured headers, which net/http's redirect rules do not cover once
// set here) to another host of its network. The
// header set is swapped atomically, so a change applies to the next
// request without reconnecting; a request already sent (such as the
// long-lived standalone SSE GET) keeps the headers it was sent with.
type headerTransport struct {
	base    http.RoundTripper
	origin  *url.URL // the configured server's: requests go there only (sameOrigin)
	static  http.Header
	current atomic.Pointer[http.Header]
	router  *progressRouter
	orders  *schemaOrders // listings' responses are read for it (schema_order.go)
	// refused is the last request refused for its origin: the go-sdk may
	// report the connection it closed on that refusal instead.
	refused atomic.Pointer[error]
	// answers bounds the answers to the server's requests in flight
	// (Streamable HTTP only; answers.go)
	answers *answerLimit
	// streamable: a POST is answered with its request's result
	// (Streamable HTTP; a legacy SSE server's come on its stream)
	streamable bool
}

func newHeaderTransport(origin *url.URL, static map[string]string, router *progressRouter) *headerTransport {
	base := http.DefaultTransport.(*http.Transport).Clone()
	t := &headerTransport{base: base, origin: origin, static: http.Header{}, router: router}
	for k, v := range static {
		t.static.Set(k, v)
	}
	t.set(nil)
	return t
}

// refusal is the last origin refusal as a suffix to err's text, when err
// does not say it already; "" without one (or without t).
func (t *headerTransport) refusal(err error) string {
	if t == nil {
		return ""
	}
	r := t.refused.Load()
	if r == nil || strings.Contains(err.Error(), (*r).Error()) {
		return ""
	}
	return " (" + (*r).Error() + ")"
}

// set layers runtime over the static headers (same name: runtime wins).
func (t *headerTransport) set(runtime map[string]string) {
	h := t.static.Clone()
	for k, v := range runtime {
		h.Set(k, v)
	}
	t.current.Store(&h)
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.origin != nil && !sameOrigin(req.URL, t.origin) {
		err := fmt.Errorf("mcp: the server sent the client to %s://%s, another origin than its configured URL's (%s://%s); requests go to that origin only",
			req.URL.Scheme, req.URL.Host, t.origin.Scheme, t.origin.Host)
		t.refused.Store(&err)
		return nil, err
	}
	h := *t.current.Load()
	traced := trace.SpanContextFromContext(req.Context()).IsValid()
	if len(h) > 0 || traced {
		req = req.Clone(req.Context()) // a RoundTripper must not modify its argument
		for k, vs := range h {
			req.Header[k] = slices.Clone(vs)
		}
		if traced { // the call's trace continues on the server (W3C headers)
			traceContext.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
		}
	}
	var release func()
	if t.answers != nil && isAnswer(req) {
		timed, rel, err := t.answers.take(req)
		if err != nil {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper closes the body, on errors too
			}
			return nil, err
		}
		req, release = timed, rel
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if release != nil {
			release()
		}
		return resp, err
	}
	if req.Method == http.MethodPost && tooLarge(resp.StatusCode) {
		refusedAlone(resp)
	}
	if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" && (resp.StatusCode < 200 || resp.StatusCode > 299) &&
		resp.StatusCode != http.StatusNotFound {
		resumeRefused(resp)
	}
	if release != nil {
		resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	}
	if m := statusMarkOf(req.Context()); m != nil && req.Method == http.MethodPost {
		m.Store(int32(resp.StatusCode))
	}
	media := mediaType(resp.Header.Get("Content-Type"))
	// Any success answering a POST, 202 and 204 too: they answer a
	// notification or a response, but the go-sdk takes either, answering
	// a request (isCall), for a broken session.
	answer := t.streamable && req.Method == http.MethodPost && resp.StatusCode >= 200 && resp.StatusCode <= 299 &&
		media != "text/event-stream"
	if answer && media != "application/json" && isCall(req) {
		start, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		answeredAmiss(resp, fmt.Sprintf("the MCP server answered the request with HTTP %d and Content-Type %q, not the application/json or text/event-stream MCP requires; the answer begins %q",
			resp.StatusCode, media, start))
		media, answer = "application/json", false
	}
	if media != "text/event-stream" || resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The go-sdk reads a JSON answer whole, and the body of an error
		// status too, whatever its type (looking for a JSON-RPC error in
		// it); only a successful event stream is read event by event,
		// each event bounded.
		resp.Body = &boundedBody{body: resp.Body, left: MaxMessageBytes}
	}
	if answer {
		if id, ok := callID(req); ok {
			checkAnswer(resp, id)
		}
	}
	if t.streamable && req.Method == http.MethodPost && media == "text/event-stream" && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if id, ok := callID(req); ok {
			resp.Body = &eventCheck{body: resp.Body, id: id, status: resp.StatusCode}
		}
	}
	if t.orders != nil && req.Method == http.MethodPost && listingOf(req.Context()) {
		resp.Body = &listTap{body: resp.Body, orders: t.orders, stream: media == "text/event-stream"}
	}
	if t.router == nil {
		return resp, nil
	}
	if media == "text/event-stream" {
		token := "" // a POST's stream carries its call's messages; a GET's, none
		if req.Method == http.MethodPost {
			token = callTokenOf(req.Context())
		}
		resp.Body = newSSETap(resp.Body, t.router, token)
	}
	return resp, nil
}

// tooLarge reports the statuses by which an HTTP server refuses a request
// for its size alone: 413 Content Too Large (its body: a call's
// arguments, an answer to the server's question, which a caller chooses),
// 414 URI Too Long and 431 Request Header Fields Too Large.
func tooLarge(status int) bool {
	return status == http.StatusRequestEntityTooLarge || status == http.StatusRequestURITooLong || status == http.StatusRequestHeaderFieldsTooLarge
}

// refusedAlone makes resp, an error status refusing one POST for its size,
// fail that request alone. Its body, the server's, seldom holds a
// JSON-RPC error (a Node server's 413 and 431, a proxy's), and the go-sdk
// takes an error status without one for a broken connection: every
// request running on the MCP session failed with it, and the session
// ended. The body is replaced by a JSON-RPC error saying the server
// refused the request as too large, which the go-sdk reports as that
// request's failure (ErrRejected) and reads nothing else of: the id is
// not the request's, which it does not look at.
func refusedAlone(resp *http.Response) {
	resp.Body.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "error": map[string]any{
		"code":    jsonrpc.CodeInvalidRequest,
		"message": tooLargeText(resp.StatusCode),
	}})
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	h := resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	resp.Header = h
	h.Del("Content-Encoding")
}

// isCall reports whether req posts a JSON-RPC request that awaits an
// answer (one with an id), as the go-sdk sends them: "method" before
// "id", or "id" before "method".
func isCall(req *http.Request) bool {
	_, ok := callID(req)
	return ok
}

// callID is the id of the JSON-RPC request that awaits an answer req
// posts (isCall); ok is false for any other post.
func callID(req *http.Request) (_ jsonrpc.ID, ok bool) {
	if req.GetBody == nil {
		return jsonrpc.ID{}, false
	}
	body, err := req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	method := false
	var id any
	for range 8 {
		tok, err := dec.Token()
		if err != nil || tok == json.Delim('}') {
			return jsonrpc.ID{}, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return jsonrpc.ID{}, false
		}
		switch tok {
		case "method":
			method = true
		case "id":
			if json.Unmarshal(v, &id) != nil {
				return jsonrpc.ID{}, false
			}
		}
		if method && id != nil {
			rid, err := jsonrpc.MakeID(id)
			return rid, err == nil
		}
	}
	return jsonrpc.ID{}, false
}

// answeredAmiss makes resp, a successful status answering a request
// (isCall) with a body the go-sdk cannot take, fail that request alone
// with message, as refusedAlone does: the go-sdk takes such an answer
// (of another media type than application/json or text/event-stream, an
// HTML page of a proxy, a text, nothing; or JSON that is not a JSON-RPC
// message) for a broken connection, which ended the session with every
// request running on it, and a read-only call was sent again. Its body
// becomes a JSON-RPC error, under an error status (the go-sdk reads a
// JSON-RPC error only there).
func answeredAmiss(resp *http.Response, message string) {
	resp.Body.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "error": map[string]any{
		"code":    jsonrpc.CodeInternalError,
		"message": message,
	}})
	resp.StatusCode, resp.Status = http.StatusBadRequest, "400 Bad Request"
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header = http.Header{"Content-Type": {"application/json"}}
}

// checkAnswer reads resp's body, a JSON answer to the request id, which
// the go-sdk reads whole too (bounded by boundedBody), and makes one that
// is not a JSON-RPC message that request's failure (answeredAmiss), as
// is one that is not its response (a response to another id, a request
// or notification of the server's own), which the go-sdk takes and then
// waits on for the response that can no longer come. A body that could
// not be read whole is passed on as it came, with its error.
func checkAnswer(resp *http.Response, id jsonrpc.ID) {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		resp.Body = &readBody{Reader: io.MultiReader(bytes.NewReader(b), errReader{err}), body: resp.Body}
		return
	}
	msg, derr := jsonrpc.DecodeMessage(b)
	if derr != nil {
		answeredAmiss(resp, fmt.Sprintf("the MCP server answered the request with HTTP %d and a body that is not a JSON-RPC message (%s); the answer begins %q",
			resp.StatusCode, cutText(derr.Error(), 200), b[:min(len(b), 200)]))
		return
	}
	if r, ok := msg.(*jsonrpc.Response); !ok || r.ID != id {
		answeredAmiss(resp, fmt.Sprintf("the MCP server answered the request with HTTP %d and a JSON-RPC message that is not the response to the request (id %v); the answer begins %q",
			resp.StatusCode, id.Raw(), b[:min(len(b), 200)]))
		return
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
}

// eventCheck passes on the event stream answering the request id event by
// event, each held until it ends (at most maxEventBytes, past which the
// rest of the stream passes unchecked, for the go-sdk to refuse), and
// replaces an event the go-sdk cannot take (data that is not a JSON-RPC
// message, a line that is no field) by the request's failure, a JSON-RPC
// error response to id, after which the stream ends: the go-sdk takes such
// an event for a broken connection, which ended the session with every
// request running on it, as answeredAmiss tells of JSON answers.
type eventCheck struct {
	body    io.ReadCloser
	id      jsonrpc.ID
	status  int
	held    []byte // the event being read
	scanned int    // of held, in whole lines
	out     []byte // to be read
	err     error  // the body's, after out
	pass    bool   // an event outgrew maxEventBytes: the rest passes unchecked
	buf     []byte
}

func (c *eventCheck) Read(p []byte) (int, error) {
	for len(c.out) == 0 && c.err == nil {
		if c.pass {
			return c.body.Read(p)
		}
		if c.buf == nil {
			c.buf = make([]byte, 32<<10)
		}
		n, err := c.body.Read(c.buf)
		c.feed(c.buf[:n])
		if err != nil && c.err == nil { // not ended by a replaced event
			if err == io.EOF {
				c.held = c.check(c.held) // the go-sdk takes an event cut by the stream's end too
			}
			c.out = append(c.out, c.held...)
			c.held, c.err = nil, err
		}
	}
	if len(c.out) > 0 {
		n := copy(p, c.out)
		c.out = c.out[n:]
		return n, nil
	}
	return 0, c.err
}

func (c *eventCheck) Close() error { return c.body.Close() }

func (c *eventCheck) feed(b []byte) {
	c.held = append(c.held, b...)
	for c.err == nil {
		i := bytes.IndexByte(c.held[c.scanned:], '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(c.held[c.scanned:c.scanned+i], "\r")
		c.scanned += i + 1
		if len(line) > 0 {
			continue
		}
		c.out = append(c.out, c.check(c.held[:c.scanned])...)
		if cap(c.held) > maxTapLine { // a large event's room is not kept for the stream's life
			c.held = bytes.Clone(c.held[c.scanned:])
		} else {
			c.held = append(c.held[:0], c.held[c.scanned:]...)
		}
		c.scanned = 0
	}
	if c.err == nil && len(c.held) > maxEventBytes {
		c.out = append(c.out, c.held...)
		c.held, c.pass = nil, true
	}
}

// check returns event, or, if the go-sdk cannot take it, the request's
// failure in its place, ending the stream (err).
func (c *eventCheck) check(event []byte) []byte {
	var name string
	var data []byte
	hasData := false
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			continue
		}
		key, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return c.fail(fmt.Sprintf("the MCP server answered the request with HTTP %d and an event stream holding a line that is no field of an event; the line begins %q",
				c.status, line[:min(len(line), 200)]))
		}
		switch string(key) {
		case "event":
			name = string(bytes.TrimSpace(value))
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, bytes.TrimSpace(value)...), true
		}
	}
	if len(data) == 0 || (name != "" && name != "message") {
		return event
	}
	if _, err := jsonrpc.DecodeMessage(data); err != nil {
		return c.fail(fmt.Sprintf("the MCP server answered the request with HTTP %d and an event whose data is not a JSON-RPC message (%s); the data begins %q",
			c.status, cutText(err.Error(), 200), data[:min(len(data), 200)]))
	}
	return event
}

func (c *eventCheck) fail(message string) []byte {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Raw(), "error": map[string]any{
		"code":    jsonrpc.CodeInternalError,
		"message": message,
	}})
	c.err = io.EOF
	return fmt.Appendf(nil, "event: message\ndata: %s\n\n", body)
}

// readBody is the rest of a body read in part; closing it closes body.
type readBody struct {
	io.Reader
	body io.Closer
}

func (b *readBody) Close() error { return b.body.Close() }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// resumeRefused makes resp, an error status refusing to resume an event
// stream (a GET with Last-Event-ID: a POST's response stream that ended
// without its request's result, which the go-sdk resumes when its events
// had ids), an event stream that ends at once. The go-sdk takes the error
// status for a broken connection and closes the session, with every
// request running on it; an empty stream it takes for the end of that
// request's response without its result, which fails that request alone
// (streamCut). A 404 still says the session is gone.
func resumeRefused(resp *http.Response) {
	resp.Body.Close()
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	resp.Body = http.NoBody
	resp.ContentLength = 0
	resp.Header = http.Header{"Content-Type": {"text/event-stream"}}
}

// tooLargeText says that the server refused a request with status (one
// of tooLarge's) as too large.
func tooLargeText(status int) string {
	what := "the request"
	switch status {
	case http.StatusRequestEntityTooLarge:
		what = "its body (the arguments, or an answer)"
	case http.StatusRequestHeaderFieldsTooLarge:
		what = "its headers"
	}
	return fmt.Sprintf("the MCP server refused the request as too large (HTTP %d %s): %s is more than it takes", status, http.StatusText(status), what)
}

// refusingTransport makes a legacy SSE server's refusal of a POST for its
// size (tooLarge) fail that request alone: the go-sdk's SSE client takes
// any failed POST for a broken connection (its jsonrpc2 layer sets the
// connection's write error), ending the session with every request
// running on it. Such a refusal is returned as the server's error
// answer, wrapping the go-sdk's "rejected by transport", which leaves
// the connection as it is.
type refusingTransport struct{ inner sdk.Transport }

func (t *refusingTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &refusingConn{c}, nil
}

type refusingConn struct{ sdk.Connection }

func (c *refusingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	var status atomic.Int32 // the POST's, noted by headerTransport
	err := c.Connection.Write(withStatusMark(ctx, &status), m)
	if outer := statusMarkOf(ctx); outer != nil {
		outer.Store(status.Load())
	}
	if s := int(status.Load()); err != nil && tooLarge(s) {
		return fmt.Errorf("%w: %w", &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: tooLargeText(s)},
			&jsonrpc.Error{Code: codeRejectedByTransport, Message: "rejected by transport"})
	}
	return err
}

// sameOrigin reports whether u has the scheme, host and port of origin.
func sameOrigin(u, origin *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(u.Scheme, origin.Scheme) && strings.EqualFold(u.Hostname(), origin.Hostname()) && port(u) == port(origin)
}

// mediaType is the media type of a Content-Type value, lower case, as the
// go-sdk reads it ("" when it cannot be parsed): the bound and the taps
// must see every answer the go-sdk takes, "Application/JSON" too.
func mediaType(contentType string) string {
	m, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return m
}

func (t *headerTransport) closeIdle() {
	if b, ok := t.base.(*http.Transport); ok {
		b.CloseIdleConnections()
	}
}

// ErrRuntimeHeaders is wrapped by SetRuntimeHeaders' errors.
var ErrRuntimeHeaders = errors.New("mcp: runtime headers rejected")

// MaxMessageBytes bounds one message from an MCP server, as the go-sdk
// bounds a stdio line and an event of an event stream (16 MiB): a
// Streamable HTTP server's JSON answer (or the body of an error status,
// of any type) longer than this fails the request instead of being read
// into memory.
const MaxMessageBytes = 16 << 20

// boundedBody fails a response body once it passes left bytes.
type boundedBody struct {
	body io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errMessageTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errMessageTooLarge
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

var errMessageTooLarge = fmt.Errorf("mcp: the server's answer is over %d MiB (MaxMessageBytes)", MaxMessageBytes>>20)
