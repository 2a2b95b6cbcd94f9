package middleware

import (
	"context"
	"errors"

	"github.com/toolbus/toolbus/toolkit"
)

// observer forwards chunks and progress to w and remembers what the
// middleware needs to know about the call: whether anything was written
// and the state the chunks add up to (error sticky, otherwise the later of
// interrupted and denied).
type observer struct {
	w       toolkit.Writer
	chunks  int
	state   toolkit.State
	onChunk func(toolkit.Chunk) // optional, called before forwarding
}

func (o *observer) Write(c toolkit.Chunk) error {
	o.chunks++
	switch c.State {
	case toolkit.StateError:
		o.state = toolkit.StateError
	case toolkit.StateInterrupted, toolkit.StateDenied:
		if o.state != toolkit.StateError {
			o.state = c.State
		}
	}
	if o.onChunk != nil {
		o.onChunk(c)
	}
	return o.w.Write(c)
}

func (o *observer) Progress(p toolkit.Progress) error { return o.w.Progress(p) }

// outcome predicts the final state and code the toolkit will give a call
// whose handler chain returned err after writing chunks that added up to
// chunkState. It follows the dispatcher's rules: a context that ended
// turns the error into interrupted or timeout, an error's code decides
// otherwise, and an error state from the chunks is sticky.
func outcome(ctx context.Context, err error, chunkState toolkit.State) (toolkit.State, toolkit.Code) {
	if err == nil {
		switch chunkState {
		case toolkit.StateError:
			return chunkState, toolkit.CodeToolError
		case toolkit.StateDenied:
			return chunkState, toolkit.CodeDenied
		case toolkit.StateInterrupted:
			return chunkState, toolkit.CodeInterrupted
		}
		return toolkit.StateSuccess, ""
	}
	code := toolkit.CodeOf(err)
	if ctx.Err() != nil && (errors.Is(err, ctx.Err()) || errors.Is(err, context.Cause(ctx)) ||
		errors.Is(err, toolkit.ErrStopped) || code == toolkit.CodeToolError) {
		code = toolkit.CodeInterrupted
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			code = toolkit.CodeTimeout
		}
	}
	state := code.State()
	if chunkState == toolkit.StateError {
		state = toolkit.StateError
	}
	return state, code
}
