package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerLimit bounds a Streamable HTTP server's requests (pings,
// sampling, elicitation) the client has taken and not answered yet. The
// go-sdk handles each request on a goroutine of its own and answers it
// by a POST of its own without a deadline: a server that sends requests
// on its streams and never completes those POSTs held a goroutine and a
// TCP connection for each, without bound, and had each of its sampling
// and elicitation requests put to a caller (relay.go) for an answer it
// would never take. Here an answer's POST has answerPostTimeout to be
// answered, and past maxServerAsks requests being handled or answered a
// further request is refused unhandled (admit) and a further answer
// dropped unsent (take), with a warning (once per Client), as a stdio
// server's requests past the bound are dropped unread (askBound).
// They are bounded in the handler, not as they are read: the go-sdk's
// Streamable HTTP connection cannot be wrapped (the session tells it of
// the initialization through an unexported method, which starts its
// standalone stream). The refusal is an answer too, which is dropped
// unsent when the answers in flight are at the bound; the go-sdk takes
// the failed POST for a request that did not reach the server and keeps
// the session.
type answerLimit struct {
	slots    chan struct{} // answers being posted
	handling atomic.Int64  // requests being handled, not yet answered
	log      *slog.Logger
	warned   atomic.Bool
	dropped  atomic.Int64 // answers dropped unsent
}

// answerPostTimeout bounds the POST of one answer, headers and all: the
// server is to accept it at once (202 Accepted).
const answerPostTimeout = 30 * time.Second

func newAnswerLimit(log *slog.Logger) *answerLimit {
	return &answerLimit{slots: make(chan struct{}, maxServerAsks), log: log}
}

var (
	errAnswerDropped = errors.New("mcp: the server has too many answers in flight (it does not complete their POSTs); this answer is dropped")
	errAskRefused    = fmt.Errorf("toolbus: the client has %d requests of this server unanswered (it does not take their answers); this one is refused unhandled", maxServerAsks)
)

// admit is the client's receiving middleware: a request of the server
// (not a notification) is handled only while fewer than maxServerAsks
// are being handled or answered, and refused with errAskRefused past
// that.
func (l *answerLimit) admit(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		if n := l.handling.Add(1); int(n)+len(l.slots) > maxServerAsks {
			l.handling.Add(-1)
			l.warn(method)
			return nil, errAskRefused
		}
		defer l.handling.Add(-1)
		return next(ctx, method, req)
	}
}

// warn says, once, that the server's requests (of method) or their
// answers (method "") are past the bound.
func (l *answerLimit) warn(method string) {
	if l.log == nil || l.warned.Swap(true) {
		return
	}
	args := []any{"handling", l.handling.Load(), "answers_in_flight", len(l.slots), "max", maxServerAsks}
	if method != "" {
		args = append(args, "method", cutText(method, 64))
	}
	l.log.Warn("mcp: the Streamable HTTP server sends requests faster than it accepts their answers; refusing them unhandled and dropping the answers", args...)
}

// take returns req with its deadline and the release of its slot, or
// errAnswerDropped past the bound.
func (l *answerLimit) take(req *http.Request) (*http.Request, func(), error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.dropped.Add(1)
		l.warn("")
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
