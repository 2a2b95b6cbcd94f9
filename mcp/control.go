package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// SubjectRuntimeHeaders prefixes the control subject on which a worker
// takes runtime-header rotations for its HTTP MCP servers:
// tools.control.<instance>.mcp_headers (RuntimeHeadersSubject).
const SubjectRuntimeHeaders = "tools.control"

// RuntimeHeadersSubject is the control subject of one worker instance.
func RuntimeHeadersSubject(instance string) string {
	return SubjectRuntimeHeaders + "." + instance + ".mcp_headers"
}

// ServeRuntimeHeaders answers runtime-header rotations for servers on
// RuntimeHeadersSubject(instance) until the subscription is
// unsubscribed. A request body is a RuntimeHeadersRequest, in msgpack,
// or in JSON when the request has Content-Type: application/json (the
// reply then is JSON too); the reply is Servers.Apply's
// RuntimeHeadersReply. An undecodable body is answered with an error and
// changes nothing. The subscription is plain (no queue group): the
// instance id names one worker.
//
//	nats req tools.control.w1.mcp_headers '{"server":"search","headers":{"Authorization":"Bearer B"}}' -H Content-Type:application/json
//	{"ok":true}
func ServeRuntimeHeaders(nc *nats.Conn, instance string, servers *Servers, logger *slog.Logger) (*nats.Subscription, error) {
	switch {
	case nc == nil:
		return nil, errors.New("toolbus/mcp: ServeRuntimeHeaders: nil connection")
	case servers == nil:
		return nil, errors.New("toolbus/mcp: ServeRuntimeHeaders: nil servers")
	case !toolkit.ValidName(instance):
		return nil, fmt.Errorf("toolbus/mcp: ServeRuntimeHeaders: instance %q is not a subject token ([A-Za-z0-9_-]+)", instance)
	}
	if logger == nil {
		logger = slog.Default()
	}
	sub, err := nc.Subscribe(RuntimeHeadersSubject(instance), func(m *nats.Msg) {
		asJSON := m.Header.Get(bus.HeaderContentType) == bus.ContentTypeJSON
		var req RuntimeHeadersRequest
		var reply RuntimeHeadersReply
		var derr error
		if asJSON {
			derr = json.Unmarshal(m.Data, &req)
		} else {
			derr = msgpack.Unmarshal(m.Data, &req)
		}
		if derr != nil {
			reply = RuntimeHeadersReply{Error: fmt.Sprintf("%v: undecodable request: %v", ErrRuntimeHeaders, derr)}
		} else {
			reply = servers.Apply(req)
		}
		if !reply.OK {
			logger.Warn("toolbus/mcp: runtime headers rejected", "server", req.Server, "err", reply.Error)
		}
		if m.Reply == "" {
			return
		}
		out := &nats.Msg{Subject: m.Reply, Header: nats.Header{}}
		if asJSON {
			out.Data, _ = json.Marshal(reply)
			out.Header.Set(bus.HeaderContentType, bus.ContentTypeJSON)
		} else {
			out.Data, _ = msgpack.Marshal(reply)
		}
		if err := nc.PublishMsg(out); err != nil {
			logger.Warn("toolbus/mcp: runtime headers: reply not sent", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("toolbus/mcp: ServeRuntimeHeaders: %w", err)
	}
	return sub, nil
}
