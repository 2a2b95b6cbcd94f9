package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// answerLimit bounds the answers to a Streamable HTTP server's requests
// (pings, sampling, elicitation) in flight. The go-sdk answers each
// request on a goroutine of its own, each answer a POST of its own
// without a deadline: a server that sends requests on its streams and
// never completes those POSTs held a goroutine and a TCP connection for
// each, without bound. Here an answer's POST has answerPostTimeout to
// be answered, and past maxServerAsks in flight a further answer is
// dropped unsent, with a warning (once per Client), as a stdio server's
// requests past the bound are (tapConn.ask). The go-sdk takes the
// failed POST for a request that did not reach the server and keeps the
// session.
type answerLimit struct {
	slots   chan struct{}
	log     *slog.Logger
	dropped atomic.Int64
}

// answerPostTimeout bounds the POST of one answer, headers and all: the
// server is to accept it at once (202 Accepted).
const answerPostTimeout = 30 * time.Second

func newAnswerLimit(log *slog.Logger) *answerLimit {
	return &answerLimit{slots: make(chan struct{}, maxServerAsks), log: log}
}

var errAnswerDropped = errors.New("mcp: the server has too many answers in flight (it does not complete their POSTs); this answer is dropped")

// take returns req with its deadline and the release of its slot, or
// errAnswerDropped past the bound.
func (l *answerLimit) take(req *http.Request) (*http.Request, func(), error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if l.dropped.Add(1) == 1 && l.log != nil {
			l.log.Warn("mcp: the Streamable HTTP server sends requests faster than it accepts their answers; dropping the answers",
				"in_flight", len(l.slots), "max", maxServerAsks)
		}
		return nil, nil, errAnswerDropped
	}
	ctx, cancel := context.WithTimeout(req.Context(), answerPostTimeout)
	var once sync.Once
	release := func() {
		once.Do(func() {
			cancel()
			<-l.slots
		})
	}
	// Released at the deadline too, whether or not the body is closed.
	context.AfterFunc(ctx, release)
	return req.WithContext(ctx), release, nil
}

// releaseBody releases an answer's slot when its response body is
// closed (the go-sdk closes it at once).
type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// isAnswer reports whether req's body is a JSON-RPC response (it has a
// result or an error before any method), read from a copy of the body
// (GetBody: the go-sdk sends bytes) and only as far as that.
func isAnswer(req *http.Request) bool {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false // a batch, or no JSON: not one of the go-sdk's answers
	}
	for range 8 {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case "method", json.Delim('}'):
			return false
		case "result", "error":
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
