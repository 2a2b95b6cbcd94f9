package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the go-sdk (v1.8.0) refuses of a POST, told before it is served, so
// that a request the go-sdk refuses, or answers without a session, costs
// the gateway no read of its body it need not make, no session built over
// the bus (a session's groups and tools are read when it is made, about
// three bus messages), and no room made under MaxSessions by ending another
// session: a flood of such requests, which cost their sender nothing,
// would otherwise cost the fleet that much each. The go-sdk still answers
// them, with the answers it gives, from base (getServer), a server with no
// session of the gateway's behind it.
//
// Where the gateway cannot tell cheaply it lets the request by, as before:
// a batch with an initialize and another request the go-sdk refuses (an
// unknown method, say) still has a session made for it. And should the
// go-sdk one day serve an initialize the gateway took for refused, base
// refuses that initialize (refuseInitialize): a client is told, rather
// than given a session of base's, which the gateway neither bounds nor
// serves tools in.

// statelessVersion is the first protocol version the go-sdk serves only
// on a stateless HTTP server: on the gateway's (stateful) it refuses every
// request of it but server/discover (discoverProbe).
const statelessVersion = "2026-07-28"

// batchlessVersion is the first protocol version whose POSTs may not be
// JSON-RPC batches.
const batchlessVersion = "2025-06-18"

// refusedUnread reports whether the go-sdk refuses r, a POST whose session
// (of its Mcp-Session-Id) is s, nil for none or an unknown one, before it
// reads r's body: a Content-Type other than application/json (415), an
// Accept without both application/json and text/event-stream (400), a
// protocol version it does not serve or a Host its DNS-rebinding guard
// refuses (sdkRefuses), a Last-Event-ID (400), a session id it does not
// know (404) or another identity's (403).
func (g *Gateway) refusedUnread(r *http.Request, s *gatewaySession) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return true
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		return true
	}
	if g.sdkRefuses(r) || len(r.Header.Values("Last-Event-ID")) > 0 {
		return true
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		// A session the gateway does not hold the go-sdk does not either:
		// it is the gateway's once its initialize is served (track).
		return s == nil || s.identity != g.identityOf(r)
	}
	return false
}

// accepts reads Accept headers as the go-sdk does (streamableAccepts).
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// mayInitialize reports whether r, a POST without a session that
// refusedUnread and checkIDs let by, may open a session: its body is an
// initialize request, or a batch (before batchlessVersion) of messages the
// go-sdk reads with one among them, read with the go-sdk's own decoder.
// Any other POST the go-sdk refuses, or serves (a ping, a notification)
// in a session it closes at once. A body checkIDs does not hold (none, or
// one declared past the bound) opens none: the go-sdk refuses it.
func mayInitialize(r *http.Request) bool {
	held, _ := r.Body.(*heldBody)
	if held == nil || len(held.data) == 0 {
		return false
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	if v >= statelessVersion {
		return false
	}
	body := held.data
	s := idScanner{b: body}
	s.space()
	if s.peek() != '[' {
		msg, err := jsonrpc.DecodeMessage(body)
		return err == nil && isInitialize(msg)
	}
	if v >= batchlessVersion || !json.Valid(body) {
		return false
	}
	// The go-sdk refuses the whole batch for one element it cannot read.
	s.i++
	found := false
	for {
		s.space()
		if s.peek() == ',' {
			s.i++
			s.space()
		}
		if s.peek() != '{' {
			return found && s.peek() == ']' // else an element that is no message
		}
		start := s.i
		if s.message().stop {
			return false // an id that is none
		}
		msg, err := jsonrpc.DecodeMessage(body[start:s.i])
		if err != nil {
			return false
		}
		found = found || isInitialize(msg)
	}
}

// isInitialize reports whether msg is an initialize request the go-sdk
// may serve: a call, with params.
func isInitialize(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	return ok && req.Method == "initialize" && req.IsCall() && len(req.Params) > 0
}

// errBaseInitialize is base's answer to an initialize.
var errBaseInitialize = errors.New("mcp: gateway: this request opens no session here: send an initialize request (alone, or in a batch before protocol 2025-06-18) without an Mcp-Session-Id header")

// refuseInitialize is base's middleware: base serves no session, so it
// refuses an initialize (see above); the session the go-sdk made for it
// then ends with the request.
func refuseInitialize(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "initialize" {
			return nil, errBaseInitialize
		}
		return next(ctx, method, req)
	}
}
