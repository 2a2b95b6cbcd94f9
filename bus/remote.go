package bus

import (
	"context"
	"iter"

	"github.com/toolbus/toolbus/toolkit"
)

// Caller is the surface agent code uses to run tools, shared by the local
// *toolkit.Toolkit and *RemoteToolkit: code written against it runs the
// same in process and over NATS.
type Caller interface {
	// Call yields a call's chunks and progress, then exactly one final.
	Call(ctx context.Context, call toolkit.ToolCall) iter.Seq[toolkit.Event]
	// Invoke returns only the final response.
	Invoke(ctx context.Context, call toolkit.ToolCall) *toolkit.Response
	// SessionSchemas lists the tools the session may see now, honouring
	// at least the given groups revision.
	SessionSchemas(ctx context.Context, session string, minRevision uint64) ([]toolkit.FunctionSchema, error)
}

var (
	_ Caller = (*toolkit.Toolkit)(nil)
	_ Caller = (*RemoteToolkit)(nil)
)

// RemoteToolkit is a Toolkit on the other side of NATS: the same Call,
// Invoke and SessionSchemas as *toolkit.Toolkit, served by the fleet. Safe
// for concurrent use.
type RemoteToolkit struct {
	c *Client
}

// NewRemoteToolkit returns a RemoteToolkit calling through c.
func NewRemoteToolkit(c *Client) *RemoteToolkit { return &RemoteToolkit{c: c} }

// Client returns the underlying client.
func (r *RemoteToolkit) Client() *Client { return r.c }

// Call runs a call on the fleet; see Client.Call.
func (r *RemoteToolkit) Call(ctx context.Context, call toolkit.ToolCall) iter.Seq[toolkit.Event] {
	return r.c.Call(ctx, call)
}

// Invoke runs a call on the fleet and returns its final response.
func (r *RemoteToolkit) Invoke(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	return r.c.Invoke(ctx, call)
}

// SessionSchemas lists the schemas the session may see across the fleet
// (see Client.Schemas), honouring at least minRevision and the latest
// revision the client saw for the session.
func (r *RemoteToolkit) SessionSchemas(ctx context.Context, session string, minRevision uint64) ([]toolkit.FunctionSchema, error) {
	r.c.mu.Lock()
	if minRevision > r.c.revs[session] {
		r.c.revs[session] = minRevision
	}
	r.c.mu.Unlock()
	return r.c.Schemas(ctx, session)
}
