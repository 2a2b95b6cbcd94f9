package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// During ServeListener's stop grace (GatewayOptions.StopGrace) the
// listener stays open for the clients of the calls in flight, and takes
// only what serves those calls (servedStopping): a call's response stream
// resumed with Last-Event-ID (a stream StreamPoll closed must be resumed
// for its result) and a session's POST of answers, notifications and
// pings only (an answer to the gateway's elicitation for a call in
// flight, a notifications/cancelled, a keepalive ping: the go-sdk's
// client closes its session, its calls with it, on a ping that fails).
// Anything else, a new session or a new call among them, is answered 503.

// stoppingText is the body of a request refused during the stop grace.
const stoppingText = "mcp: gateway: stopping: it serves the calls in flight only"

// servedStopping reports whether r is served during the stop grace, and
// answers 503 to one that is not. A POST's body is read here (within
// gatewayMaxBody); the request returned carries it again.
func servedStopping(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	switch {
	case r.Method == http.MethodGet && carriesCall(r), r.Method == http.MethodDelete:
		return r, true
	case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" && r.Body != nil:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, gatewayMaxBody))
		if err == nil && noNewWork(body) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			return r, true
		}
	}
	w.Header().Set("Connection", "close")
	http.Error(w, stoppingText, http.StatusServiceUnavailable)
	return r, false
}

// noNewWork reports whether body is a JSON-RPC message, or a batch of
// them, with no request among them but pings: answers (results, errors),
// notifications and pings. Its keys are read as written, as the go-sdk
// reads them: a struct's fields would also take "Method" or "ID", so a
// call carrying "Method": "ping" as well would pass for a ping.
func noNewWork(body []byte) bool {
	var msgs []map[string]json.RawMessage
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] != '[' {
		body = append(append([]byte{'['}, body...), ']')
	}
	if json.Unmarshal(body, &msgs) != nil || len(msgs) == 0 {
		return false
	}
	for _, m := range msgs {
		var method string
		if raw, ok := m["method"]; ok && json.Unmarshal(raw, &method) != nil {
			return false
		}
		if id := m["id"]; method != "" && method != "ping" && len(id) > 0 && string(id) != "null" {
			return false
		}
	}
	return true
}

// polledStreams counts, for each call's response stream (session and
// stream id), the times the gateway closed it for polling
// (GatewayOptions.StreamPoll) less the times its client resumed it since:
// a stream closed and not yet resumed carries a call in flight that no
// request holds. A client that has not resumed its stream within
// polledStale of its last close has gone (a client resumes after the
// close's retry hint): its stream is forgotten, so that neither the
// gateway's memory nor a later stop's grace waits for it, and at most
// maxPolled streams are awaited at once.
type polledStreams struct {
	mu  sync.Mutex
	n   map[string]polledStream
	now func() time.Time // time.Now; tests set it
}

// polledStream is a stream's count of closes not resumed, and the time
// of its last close.
type polledStream struct {
	n    int
	last time.Time
}

const (
	polledStale = time.Minute
	maxPolled   = 1 << 16
)

func (p *polledStreams) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// closed notes the close of a stream for polling.
func (p *polledStreams) closed(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[string]polledStream{}
	}
	now := p.clock()
	if _, ok := p.n[key]; !ok && len(p.n) >= maxPolled {
		p.forgetStale(now)
		if len(p.n) >= maxPolled {
			return // not awaited: a stop's grace may end before its client resumes
		}
	}
	st := p.n[key]
	p.n[key] = polledStream{n: st.n + 1, last: now}
}

// resumed notes a request resuming a stream: it holds the stream's call
// from now on.
func (p *polledStreams) resumed(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.n[key]; st.n > 1 {
		st.n--
		p.n[key] = st
	} else {
		delete(p.n, key)
	}
}

// awaiting reports whether a stream closed for polling awaits its client.
func (p *polledStreams) awaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetStale(p.clock())
	return len(p.n) > 0
}

// forgetStale forgets the streams not resumed within polledStale of
// their last close.
func (p *polledStreams) forgetStale(now time.Time) {
	for key, st := range p.n {
		if now.Sub(st.last) > polledStale {
			delete(p.n, key)
		}
	}
}

// pollWatch notes in polled the close for polling (an SSE "close" event)
// of the response stream written through it: the stream's id is the
// Last-Event-ID a GET resumed, or that of the first event a POST's
// response wrote. The go-sdk writes each event whole in one Write.
type pollWatch struct {
	http.ResponseWriter
	polled  *polledStreams
	session string
	stream  string
}

// streamKey is the key of a session's stream in polledStreams.
func streamKey(session, stream string) string { return session + "/" + stream }

// newPollWatch watches w, the response to r, a request that carries a
// call, noting r's resume of a stream first.
func newPollWatch(w http.ResponseWriter, r *http.Request, polled *polledStreams) *pollWatch {
	pw := &pollWatch{ResponseWriter: w, polled: polled, session: r.Header.Get("Mcp-Session-Id")}
	if r.Method == http.MethodGet {
		pw.stream, _, _ = strings.Cut(r.Header.Get("Last-Event-ID"), "_")
		polled.resumed(streamKey(pw.session, pw.stream))
	}
	return pw
}

func (w *pollWatch) Write(p []byte) (int, error) {
	if w.stream == "" {
		for line := range bytes.Lines(p) {
			if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
				w.stream, _, _ = strings.Cut(strings.TrimSpace(string(id)), "_")
				break
			}
			if bytes.HasPrefix(line, []byte("data:")) {
				break
			}
		}
	}
	if w.stream != "" && bytes.HasPrefix(p, []byte("event: close\n")) {
		// Before the client can read it, and so resume the stream.
		w.polled.closed(streamKey(w.session, w.stream))
	}
	return w.ResponseWriter.Write(p)
}

func (w *pollWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }
