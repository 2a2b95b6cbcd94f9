package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolbus/toolbus/mcp"
)

// noBatchesFrom is the first MCP version without JSON-RPC batches.
const noBatchesFrom = "2025-06-18"

// A JSON-RPC batch is never handed to the SDK as one: its stdio transport
// (go-sdk v1.8.0) takes each notification of a batch for a request with
// no id, and so ends the session at a batch of two notifications
// ("duplicate message ID"), never writes the answers of a batch that has
// one (it waits for the notification's), and ends the session at the next
// batch with a notification after it; and under 2025-06-18 and later it
// ends the session at any batch, interrupting the calls in flight. So
// drainIO hands the SDK a batch's messages one per line, in their order,
// holds the responses to its requests as the SDK writes them, and writes
// them as one array once it has them all (JSON-RPC 2.0: a batch of
// notifications alone is answered with nothing). A session whose
// initialization settled on 2025-06-18 or later has its batches refused
// instead, with a JSON-RPC error (-32600, id null), and goes on; a batch
// that comes before the answer to initialize is served. A message of a
// batch that would be refused as a line of its own is answered in the
// batch's array (unbatch).

// stdioBatch is a batch of the input whose requests have not all been
// answered.
type stdioBatch struct {
	index     map[string]int    // a request's idKey: the place of its answer in responses
	responses []json.RawMessage // in the order of the batch's messages: answers, and errors (elementError)
	left      int               // answers still to come
}

// isBatch reports whether line, one the SDK can read (refusal has passed
// it), is a batch.
func isBatch(line []byte) bool {
	line = bytes.TrimLeft(line, " \t\r")
	return len(line) > 0 && line[0] == '['
}

// unbatch hands the SDK the messages of line, a batch refusal has passed,
// one per line, noting its requests as one batch; or it returns the
// JSON-RPC error refusing the batch. A message of the batch the SDK
// cannot read, or would answer under another id than the one sent, is
// not handed on but answered in the batch's array, with the error a lone
// one gets (under its id when it is a request with an id that can be
// answered under, else null), as JSON-RPC 2.0 answers each message of a
// batch on its own. Two requests of one id, or one reusing the id of a
// request not yet answered, refuse the whole batch: its answers could not
// be told apart.
func (d *drainIO) unbatch(line []byte) []byte {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil { // refusal has read it
		return refuse(nil, -32700, "Parse error: "+err.Error()+skipped)
	}
	d.mu.Lock()
	if d.version >= noBatchesFrom {
		v := d.version
		d.mu.Unlock()
		return refuse(nil, -32600, "Invalid Request: a JSON-RPC batch, which MCP "+v+", this session's version, does not have: send its messages one per line"+skipped)
	}
	b := &stdioBatch{index: map[string]int{}}
	var pass []json.RawMessage
	for _, raw := range raws {
		if e := elementError(raw); e != nil {
			b.responses = append(b.responses, e)
			continue
		}
		pass = append(pass, raw)
		msg, _ := jsonrpc.DecodeMessage(raw) // elementError has read it
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		key, ok := idKey(req.ID)
		if !ok {
			continue
		}
		switch _, dup := b.index[key]; {
		case dup:
			d.mu.Unlock()
			return refuse(nil, -32600, fmt.Sprintf("Invalid Request: duplicate id %v among the requests of the batch", jsonID(req.ID))+skipped)
		case d.pending[key] || d.batches[key] != nil:
			d.mu.Unlock()
			return refuse(nil, -32600, fmt.Sprintf("Invalid Request: the batch reuses the id %v of a request not yet answered", jsonID(req.ID))+skipped)
		}
		b.index[key] = len(b.responses)
		b.responses = append(b.responses, nil)
		b.left++
	}
	for key := range b.index {
		d.batches[key] = b
	}
	d.mu.Unlock()
	for _, raw := range pass {
		d.note(raw, true)
		d.ready = append(append(d.ready, raw...), '\n')
	}
	if b.left == 0 && len(b.responses) > 0 { // errors only: answered now
		d.write(b.array())
	}
	return nil
}

// elementError is the error answering raw, a message of a batch, when the
// SDK cannot read it or would answer it under another id (as refusal
// answers a lone one), or nil.
func elementError(raw json.RawMessage) json.RawMessage {
	const skippedOne = " (the message was skipped)"
	var e []byte
	msg, err := jsonrpc.DecodeMessage(raw)
	switch {
	case err != nil:
		e = refuse(requestID(raw), -32600, "Invalid Request: "+err.Error()+skippedOne)
	case mcp.CheckIDs(raw) != nil:
		var id json.RawMessage
		if _, ok := msg.(*jsonrpc.Request); ok && utf8.Valid(raw) {
			id = idText(raw)
		}
		e = refuse(id, -32600, "Invalid Request: "+mcp.CheckIDs(raw).Error()+skippedOne)
	default:
		return nil
	}
	return bytes.TrimSuffix(e, []byte{'\n'})
}

// jsonID is an id as JSON writes it.
func jsonID(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// array is the batch's responses as one JSON array, and a line's end.
func (b *stdioBatch) array() []byte {
	out := []byte{'['}
	for i, r := range b.responses {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']', '\n')
}

// batched looks at p, a message the SDK writes: the answer to initialize
// sets the session's version; a response to a request of a batch is held
// (held), and the last one releases the batch's responses as one array
// (out). Anything else is out as it came.
func (d *drainIO) batched(p []byte) (out []byte, held bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.batches) == 0 && d.initID == "" {
		return p, false
	}
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(p))
	if err != nil {
		return p, false
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return p, false
	}
	key, ok := idKey(resp.ID)
	if !ok {
		return p, false
	}
	if key == d.initID {
		d.initID = ""
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
			d.version = r.ProtocolVersion
		}
	}
	b := d.batches[key]
	if b == nil {
		return p, false
	}
	delete(d.batches, key)
	b.responses[b.index[key]] = bytes.Clone(bytes.TrimSpace(p))
	if b.left--; b.left > 0 {
		return nil, true
	}
	return b.array(), false
}
