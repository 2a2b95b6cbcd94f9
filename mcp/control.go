package mcp

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// ServeRuntimeHeaders answers runtime-header rotations for servers on the
// worker's control subject wire.HeadersSubject(instance)
// (tools.control.<instance>.mcp_headers) until the subscription is
// unsubscribed. A request is a wire.HeadersRequest and its answer the
// wire.HeadersReply of Servers.Apply, in msgpack, or in JSON both ways
// when the request has Content-Type: application/json. An undecodable
// body is answered with an error and changes nothing. The subscription is
// plain (no queue group): the instance id names one worker.
//
//	nats req tools.control.w1.mcp_headers '{"server":"search","headers":{"Authorization":"Bearer B"}}' -H Content-Type:application/json
//	{"ok":true}
func ServeRuntimeHeaders(nc *nats.Conn, instance string, servers *Servers, logger *slog.Logger) (*nats.Subscription, error) {
	switch {
	case nc == nil:
		return nil, errors.New("mcp: ServeRuntimeHeaders: nil connection")
	case servers == nil:
		return nil, errors.New("mcp: ServeRuntimeHeaders: nil servers")
	case !toolkit.ValidName(instance):
		return nil, fmt.Errorf("mcp: ServeRuntimeHeaders: instance %q is not a subject token ([A-Za-z0-9_-]+)", instance)
	}
	if logger == nil {
		logger = slog.Default()
	}
	sub, err := nc.Subscribe(wire.HeadersSubject(instance), func(m *nats.Msg) {
		var req wire.HeadersRequest
		var reply wire.HeadersReply
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil {
			reply = wire.HeadersReply{Error: fmt.Sprintf("%v: undecodable request: %v", ErrRuntimeHeaders, err)}
		} else {
			reply = servers.Apply(req)
		}
		if !reply.OK {
			logger.Warn("mcp: runtime headers rejected", "server", req.Server, "err", reply.Error)
		}
		if err := wire.Respond(nc, m, &reply); err != nil && !errors.Is(err, wire.ErrNoReplySubject) {
			logger.Warn("mcp: runtime headers: reply not sent", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: ServeRuntimeHeaders: %w", err)
	}
	return sub, nil
}
