package middleware

import (
	"context"
	"errors"

	"github.com/toolbus/toolbus/toolkit"
)

// observer forwards chunks and progress to w and remembers what the
// middleware needs to know about the call: whether anything was written
// and the state the chunks add up to (toolkit.MergeState), which
// toolkit.Outcome turns into the call's final state and code.
type observer struct {
	w       toolkit.Writer
	chunks  int
	state   toolkit.State
	onChunk func(toolkit.Chunk) // optional, called before forwarding
	err     error               // the first error w's Write returned
	asked   bool                // the tool asked its caller something (Ask)
}

func (o *observer) Write(c toolkit.Chunk) error {
	o.chunks++
	o.state = toolkit.MergeState(o.state, c.State)
	if o.onChunk != nil {
		o.onChunk(c)
	}
	err := o.w.Write(c)
	if err != nil && o.err == nil {
		o.err = err
	}
	return err
}

func (o *observer) Progress(p toolkit.Progress) error { return o.w.Progress(p) }

// Log passes a tool's log message on (toolkit.LogWriter).
func (o *observer) Log(m toolkit.LogMessage) error {
	if lw, ok := o.w.(toolkit.LogWriter); ok {
		return lw.Log(m)
	}
	return nil
}

// Ask passes a tool's request to its caller on (toolkit.Asker).
func (o *observer) Ask(ctx context.Context, method string, params any) (any, error) {
	o.asked = true
	return toolkit.Ask(ctx, o.w, method, params)
}

// outputFailed reports whether err, returned by a toolkit Writer's Write,
// is the call's failure by its output: the toolkit refused a chunk past
// Options.MaxResultBytes (ErrOutputTooLarge) or one it could not merge
// (ErrUnmergeable). The call then ends with that failure, whatever its
// handler returns; a writer's own write error (the caller gone, say, or
// a tool_error of its own) is not one.
func outputFailed(err error) bool {
	return errors.Is(err, toolkit.ErrOutputTooLarge) || errors.Is(err, toolkit.ErrUnmergeable)
}
