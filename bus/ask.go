package bus

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// A tool's requests to its caller (toolkit.Ask: MCP's elicitation/create
// and sampling/createMessage). The worker sends an ask frame naming
// tools.answer.<instance>.<token> (a fresh random token per request) and
// waits for the caller's wire.Answer there, while the call's heartbeats go
// on; the caller runs its handler (ClientOptions.Asker, or the one in the
// call's context: WithAsker) and publishes the answer. A caller without a
// handler answers that it cannot. The wait ends with the tool's context.

// MaxAsksPerCall is how many of one call's requests a Client answers at
// once.
const MaxAsksPerCall = 16

// maxAsksPending bounds the requests a worker waits on at once.
const maxAsksPending = 10_000

// Ask implements toolkit.Asker.
func (s *sender) Ask(ctx context.Context, method string, params any) (any, error) {
	if method == "" {
		return nil, errors.New("bus: Ask needs a method")
	}
	token, err := answerToken()
	if err != nil {
		return nil, err
	}
	ch := make(chan answerOf, 1)
	w := s.w
	w.mu.Lock()
	if w.asks == nil {
		w.asks = map[string]chan answerOf{}
	}
	if len(w.asks) >= maxAsksPending {
		w.mu.Unlock()
		return nil, fmt.Errorf("bus: %d requests to callers are waiting already", maxAsksPending)
	}
	w.asks[token] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.asks, token)
		w.mu.Unlock()
	}()

	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil, toolkit.ErrStopped
	}
	if s.holding() {
		s.flush() // the output so far first
	}
	err = s.publish(&wire.Frame{Kind: wire.KindAsk, Ask: &wire.Ask{Method: method, Params: params, Reply: wire.AnswerSubject(w.opts.Instance, token)}})
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("bus: sending the request to the caller: %w", err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		if a.Error != "" {
			return nil, fmt.Errorf("the caller answered %s with an error: %s", method, a.Error)
		}
		return a.Result, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-s.ctx.Done():
		return nil, context.Cause(s.ctx)
	}
}

// answerOf is what a request's waiter gets: the caller's answer, or why
// it could not be read.
type answerOf struct {
	wire.Answer
	err error
}

// answerToken is a request's answer token: 128 random bits. Any caller
// may publish on tools.answer.<instance>.*, so the token is all that
// keeps one caller from answering another's request; nuid's tokens, one
// counter step apart, were guessable from a caller's own.
func answerToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("bus: making a request's answer token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// onAnswer routes a caller's answer to the request waiting for it; an
// answer nobody waits for (late, or forged) is dropped unread: any caller
// may publish on the subject.
func (w *Worker) onAnswer(m *nats.Msg) {
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if w.onProbeAnswer(token, m) {
		return
	}
	w.mu.Lock()
	ch := w.asks[token]
	w.mu.Unlock()
	if ch == nil {
		return
	}
	var a answerOf
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &a.Answer); err != nil {
		// Only the caller saw the token: this is its answer, and it sends
		// no other. The tool hears why, rather than waiting for its
		// deadline (or for ever).
		w.log.Warn("bus: an undecodable answer to a tool's request", "subject", m.Subject, "err", err)
		a.err = fmt.Errorf("the caller's answer could not be read (msgpack, or JSON with Content-Type: application/json): %w", err)
	}
	select {
	case ch <- a:
	default: // answered already
	}
}

// Asker answers a tool's request (toolkit.Ask) on the caller's side:
// method and params as MCP has them; the result goes back to the tool.
type Asker = toolkit.AskFunc

// WithAsker returns ctx with an Asker for the calls made with it: it
// answers their tools' requests instead of ClientOptions.Asker (the MCP
// gateway relays each call's requests to its own MCP session this way).
// It is toolkit.WithAsker: the same context answers in process too.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return toolkit.WithAsker(ctx, a)
}

// ask answers a tool's request: on a goroutine of its own, so the call's
// other frames go on being read, while fewer than MaxAsksPerCall of the
// call's requests are being answered; at once with an error past that (a
// worker may send ask frames without end). The handler's context ends
// when the call does.
func (c *Client) ask(ctx context.Context, st *callState, ask *wire.Ask) {
	if st.asking == nil {
		st.asking = new(atomic.Int32)
		// The handlers' context ends with the call (callState.endAsks):
		// an answer nobody will read need not be waited for.
		st.asks, st.stopAsks = context.WithCancel(ctx)
	}
	if st.asking.Add(1) > MaxAsksPerCall {
		st.asking.Add(-1)
		c.publishAnswer(ask, &wire.Answer{Error: fmt.Sprintf("this caller is answering %d requests of this call already", MaxAsksPerCall)})
		return
	}
	go func(ctx context.Context, asking *atomic.Int32) {
		defer asking.Add(-1)
		c.answer(ctx, ask)
	}(st.asks, st.asking)
}

// answer runs the caller's handler for a tool's request and publishes the
// answer.
func (c *Client) answer(ctx context.Context, ask *wire.Ask) {
	a := toolkit.AskerFrom(ctx)
	if a == nil {
		a = c.opts.Asker
	}
	var ans wire.Answer
	if a == nil {
		ans.Error = fmt.Sprintf("this caller cannot answer %s requests", ask.Method)
	} else if res, err := a(ctx, ask.Method, ask.Params); err != nil {
		ans.Error = err.Error()
	} else {
		ans.Result = res
	}
	c.publishAnswer(ask, &ans)
}

// publishAnswer sends ans to the tool that asked.
func (c *Client) publishAnswer(ask *wire.Ask, ans *wire.Answer) {
	data, err := wire.Msgpack.Marshal(ans)
	if err != nil && ans.Error == "" {
		// The tool hears why, rather than waiting for its deadline.
		data, err = wire.Msgpack.Marshal(&wire.Answer{Error: "the caller's answer could not be sent: " + err.Error()})
	}
	if err == nil {
		err = c.nc.Publish(ask.Reply, data)
		if err != nil && ans.Error == "" {
			// Over the server's max_payload, say: the tool hears why,
			// rather than waiting for its deadline, heartbeats keeping
			// its call alive meanwhile.
			if data, merr := wire.Msgpack.Marshal(&wire.Answer{Error: "the caller's answer could not be sent: " + err.Error()}); merr == nil {
				c.nc.Publish(ask.Reply, data)
			}
		}
	}
	if err != nil {
		c.log.Warn("bus: answering a tool's request", "method", ask.Method, "err", err)
	}
}
