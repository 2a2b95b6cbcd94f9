package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolbus/toolbus/mcp"
)

// maxBatch bounds the messages of a JSON-RPC batch, as the HTTP gateway
// bounds them: the SDK handles each request of a batch on a goroutine of
// its own, and some 70,000 notifications or pings fit in one line.
const maxBatch = 1024

// stdioDrain is how long `mcp stdio` answers the requests in flight once
// its stdin has ended, unless --drain says otherwise.
const stdioDrain = 30 * time.Second

// stdioStopWait bounds how long `mcp stdio`, stopped by a signal, waits
// for the interrupted results of its calls to be written; and, at the end
// of its stdin, how long its session's close waits for the writes still
// blocked on stdout once the drain is over.
const stdioStopWait = 5 * time.Second

// maxLine bounds an input line (one JSON-RPC message or batch), as the
// HTTP gateway bounds a request's body: a longer line is dropped as it
// comes, never held, and answered with a JSON-RPC error (id null). Passed
// on, it would reach the go-sdk's own frame limit (16 MiB), at which the
// SDK ends the session, interrupting its calls.
const maxLine = 4 << 20

// drainIO sits between `mcp stdio`'s stdin/stdout and the SDK's stdio
// transport so that what was asked is answered before the session ends:
// the SDK ends a session, and cancels its requests, when the read side
// ends, so a client that writes its requests and closes stdin (a script, a
// pipe) would get no answers. It notes the ids of the requests read (one
// JSON-RPC message or batch per line, as MCP's stdio transport frames
// them) and of the responses written, and holds back the end of the input
// until every request read has had its response, or until drain has
// passed. It works on the bytes, not on the SDK's connection. It hands
// the SDK no JSON-RPC batch as one, but its messages one per line, and
// writes the responses to its requests as one array (mcp_stdio_batch.go).
//
// It hands the SDK whole lines of at most maxLine bytes: the SDK ends the
// session at a line it cannot read as a JSON-RPC message or batch, or
// over its frame limit, interrupting the calls in flight, so such a line
// (and a longer one, dropped as it comes) is answered here with a
// JSON-RPC error (refusal) and not passed on.
//
// Its writes to out can be given up (giveUp): a client that stops reading
// stdout blocks them, and the SDK's session close waits for them. A stop
// by a signal gives them up after its wait; the end of the input gives
// them up stopWait after it has been handed to the SDK (the drain then
// over), unless stop came first, so that a client that closed stdin and
// stopped reading does not keep the process for ever.
type drainIO struct {
	in    io.Reader
	out   io.Writer
	drain time.Duration
	// stopWait is how long, once the input's end has been handed to the
	// SDK, writes to out are waited for before they are given up.
	stopWait time.Duration

	buf       []byte // what in.Read reads into
	ready     []byte // input for the SDK, from ready[off:]
	off       int
	err       error         // in's error (not io.EOF), returned once ready is read
	line      []byte        // the input line read so far
	size      int           // the input line's length so far
	over      bool          // the line passed maxLine: its bytes are dropped
	eof       bool          // in ended; the next Read waits, then says so
	wslot     chan struct{} // one message at a time on out
	stuck     chan struct{} // closed by giveUp: writes waiting on out fail
	stuckOnce sync.Once
	mu        sync.Mutex
	giveUpAt  *time.Timer            // started at the input's end: giveUp
	stopped   bool                   // stop was called: no giveUpAt
	gaveUp    int                    // writes failed by giveUp
	pending   map[string]bool        // ids of requests read and not answered
	early     map[string]bool        // ids answered before their line's newline was read
	batches   map[string]*stdioBatch // the batches unanswered, by their requests' idKey
	initID    string                 // the idKey of an initialize read and not answered
	version   string                 // the protocol version initialize settled on
	idle      chan struct{}          // a token when pending became empty
	closed    chan struct{}
	once      sync.Once
}

func newDrainIO(in io.Reader, out io.Writer, drain time.Duration) *drainIO {
	return &drainIO{in: in, out: out, drain: drain, stopWait: stdioStopWait, buf: make([]byte, 32<<10), pending: map[string]bool{}, early: map[string]bool{}, batches: map[string]*stdioBatch{}, idle: make(chan struct{}, 1), closed: make(chan struct{}), wslot: make(chan struct{}, 1), stuck: make(chan struct{})}
}

// reader and writer are the two sides given to the SDK's IOTransport.
func (d *drainIO) reader() io.ReadCloser  { return drainReader{d} }
func (d *drainIO) writer() io.WriteCloser { return drainWriter{d} }

type drainReader struct{ d *drainIO }
type drainWriter struct{ d *drainIO }

// Read returns the input's complete lines; at its end it first waits for
// the answers (the SDK has by then been handed every request read).
func (r drainReader) Read(p []byte) (int, error) {
	d := r.d
	for d.off == len(d.ready) {
		d.ready, d.off = d.ready[:0], 0
		switch {
		case d.err != nil:
			return 0, d.err
		case d.eof:
			d.wait()
			d.ended()
			return 0, io.EOF
		}
		n, err := d.in.Read(d.buf)
		d.scan(d.buf[:n])
		switch {
		case err == io.EOF:
			d.eof = true
			d.scanLine(false) // a last line without its newline
		case err != nil:
			d.err = err
		}
	}
	n := copy(p, d.ready[d.off:])
	d.off += n
	return n, nil
}

// Close ends a wait for answers: the session is over.
func (r drainReader) Close() error {
	r.d.once.Do(func() { close(r.d.closed) })
	return nil
}

// Write writes one message (or batch) of the SDK's and notes the
// responses in it.
func (w drainWriter) Write(p []byte) (int, error) {
	out, held := w.d.batched(p)
	if held {
		return len(p), nil
	}
	if err := w.d.write(out); err != nil {
		return 0, err
	}
	w.d.note(out, false)
	return len(p), nil
}

// errOutputStuck fails the writes still waiting on stdout once the
// gateway has given up on it (giveUp).
var errOutputStuck = errors.New("stdout is not being read; the message was not written")

// write writes p on out, one message at a time, and returns when it has
// been written or when the output is given up: a client that stops
// reading stdout fills its pipe and blocks the write, and the SDK's
// session close waits for the requests blocked on their answers' writes,
// so without giveUp a stop would wait for ever. A write given up goes on
// in its goroutine until the process exits (a blocked write on a pipe
// cannot be interrupted), and p with it.
func (d *drainIO) write(p []byte) error {
	select {
	case d.wslot <- struct{}{}:
	case <-d.stuck:
		return d.givenUp()
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.out.Write(p)
		<-d.wslot
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-d.stuck:
		return d.givenUp()
	}
}

// givenUp counts a write failed by giveUp and returns errOutputStuck.
func (d *drainIO) givenUp() error {
	d.mu.Lock()
	d.gaveUp++
	d.mu.Unlock()
	return errOutputStuck
}

// dropped is how many requests read were not answered on out (their
// answers never written, or their writes given up), and whether any write
// was given up.
func (d *drainIO) dropped() (n int, gaveUp bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending), d.gaveUp > 0
}

// giveUp fails the writes waiting on out, now and from now on: the
// gateway is stopping and has waited long enough for its client to read.
func (d *drainIO) giveUp() { d.stuckOnce.Do(func() { close(d.stuck) }) }

// ended starts, once, the wait after which the writes on out are given
// up: the input's end is being handed to the SDK, whose session close
// waits for the writes blocked on out.
func (d *drainIO) ended() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.giveUpAt == nil && !d.stopped {
		d.giveUpAt = time.AfterFunc(d.stopWait, d.giveUp)
	}
}

// stop stops the wait started by ended, if it has not given up yet: the
// session is over.
func (d *drainIO) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.giveUpAt != nil {
		d.giveUpAt.Stop()
	}
}

func (w drainWriter) Close() error { return nil }

// scan notes the requests of the complete lines in b.
func (d *drainIO) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			d.add(b)
			return
		}
		d.add(b[:i])
		d.scanLine(true)
		b = b[i+1:]
	}
}

func (d *drainIO) add(b []byte) {
	d.size += len(b)
	if !d.over && d.size > maxLine {
		d.over, d.line = true, nil // drop what was held
	}
	if !d.over {
		d.line = append(d.line, b...)
	}
}

// scanLine ends the line read: it is passed on to the SDK (with its
// newline, nl), or answered with refusal.
func (d *drainIO) scanLine(nl bool) {
	var refused []byte
	if d.over {
		refused = refuse(nil, -32600, fmt.Sprintf("Invalid Request: the line is %d bytes, over the %d a message may have (the line was skipped; MCP over stdio is one JSON-RPC message per line)", d.size, maxLine))
	} else {
		refused = refusal(d.line)
	}
	if refused == nil && isBatch(d.line) {
		refused = d.unbatch(d.line)
	} else if refused == nil {
		d.note(d.line, true)
		d.ready = append(d.ready, d.line...)
		if nl {
			d.ready = append(d.ready, '\n')
		}
	}
	if refused != nil {
		d.write(refused)
	}
	d.line, d.size, d.over = d.line[:0], 0, false
}

// refusal is the JSON-RPC error answering an input line the SDK could
// not read as a message or batch, or would answer under ids other than
// the ones sent (mcp.CheckIDs: 1.5 would be answered as 1), or nil for a
// line it can (or a blank one): its id is null, or that of a lone
// request refused for its id, as sent, so that its client finds it,
// unless the line is not UTF-8 (stdout stays UTF-8) (a
// response's, which the SDK would match to another of its requests, is
// refused likewise, with id null); a lone request the SDK cannot read is
// refused under its id too, when it has one it could answer under
// (requestID).
// A batch it passes is refused later when the session's version has no
// batches (drainIO.unbatch).
func refusal(line []byte) []byte {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	code, reason := -32600, ""
	var batch []json.RawMessage
	switch {
	case !json.Valid(line):
		// Why, as encoding/json says it: a character where it does not
		// belong, or nesting past its 10000 levels.
		code, reason = -32700, "Parse error: the line is not one JSON value: "+json.Unmarshal(line, new(json.RawMessage)).Error()
	case line[0] == '[' && json.Unmarshal(line, &batch) == nil:
		// Its messages are checked one by one as it is handed on
		// (drainIO.unbatch).
		switch {
		case len(batch) == 0:
			reason = "Invalid Request: an empty batch"
		case len(batch) > maxBatch:
			reason = fmt.Sprintf("Invalid Request: a batch of more than %d messages: send at most %d in one line", maxBatch, maxBatch)
		}
	default:
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return refuse(requestID(line), code, "Invalid Request: "+err.Error()+skipped)
		}
		if err := mcp.CheckIDs(line); err != nil {
			var id json.RawMessage // a response's: null, it is answered by nothing
			if _, ok := msg.(*jsonrpc.Request); ok && utf8.Valid(line) {
				id = idText(line) // what is not UTF-8 is not written back
			}
			return refuse(id, code, "Invalid Request: "+err.Error()+" (the message was skipped; MCP request ids are strings or integers)")
		}
	}
	if reason == "" {
		return nil
	}
	return refuse(nil, code, reason+skipped)
}

// requestID is the id of the request in line, one JSON object the SDK
// cannot read as a message, as sent, so that its client's request is
// answered (with the error) rather than waited for: nil (null) unless the
// object has a method and an id, a string or a number, the SDK would
// answer under as sent (mcp.CheckIDs), and the line is UTF-8.
func requestID(line []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if !utf8.Valid(line) || json.Unmarshal(line, &m) != nil || m["method"] == nil || mcp.CheckIDs(line) != nil {
		return nil
	}
	switch id := m["id"]; {
	case len(id) == 0:
	case id[0] == '"', id[0] == '-', '0' <= id[0] && id[0] <= '9':
		return id
	}
	return nil
}

// idText is the text of the "id" member of the JSON object b as sent, as
// the SDK reads it: the key matched exactly (not in another case), the
// last one if repeated; nil for none.
func idText(b []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return id
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return id
		}
		if k == "id" {
			id = v
		}
	}
	return id
}

// skipped ends the message of a line's refusal.
const skipped = " (the line was skipped; MCP over stdio is one JSON-RPC message per line)"

// refuse is the JSON-RPC error with code and message, and a line's end;
// its id is id, or null.
func refuse(id json.RawMessage, code int, message string) []byte {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message}})
	return append(b, '\n')
}

// note adds the ids of the requests in a message or batch (read) or
// removes those of its responses (written). The SDK decodes a message
// without waiting for its newline, so a response may come before its
// request's line is noted: that request is noted as answered (MCP ids are
// not reused within a session). Messages are read as the SDK reads them
// (jsonrpc.DecodeMessage), so that a request is one the SDK answers, under
// the id it answers it with.
func (d *drainIO) note(b []byte, read bool) {
	b = bytes.TrimSpace(b)
	var raws []json.RawMessage
	switch {
	case len(b) == 0:
		return
	case b[0] == '[':
		if json.Unmarshal(b, &raws) != nil {
			return
		}
	default:
		raws = []json.RawMessage{b}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			continue
		}
		var id jsonrpc.ID
		req, isReq := msg.(*jsonrpc.Request)
		if isReq {
			id = req.ID
		} else {
			id = msg.(*jsonrpc.Response).ID
		}
		key, ok := idKey(id)
		switch {
		case !ok:
		case read && isReq && d.early[key]:
			delete(d.early, key)
		case read && isReq:
			d.pending[key] = true
			if req.Method == "initialize" {
				d.initID = key
			}
		case !read && !isReq && d.pending[key]:
			delete(d.pending, key)
		case !read && !isReq:
			d.early[key] = true
		}
	}
	if !read && len(d.pending) == 0 {
		select {
		case d.idle <- struct{}{}:
		default:
		}
	}
}

// idKey is a request id as the SDK holds it, and writes it back: an
// int64 (a number id read as a float and converted: -0 is answered as 0,
// 7.0 as 7; refusal refuses the ids the conversion changes) or a string;
// ok is false for no id or null.
func idKey(id jsonrpc.ID) (key string, ok bool) {
	switch v := id.Raw().(type) {
	case string:
		return "s" + v, true
	case int64:
		return "n" + strconv.FormatInt(v, 10), true
	}
	return "", false
}

// wait waits until no request is unanswered, for at most d.drain.
func (d *drainIO) wait() { d.waitFor(d.drain) }

// waitFor waits until no request is unanswered, for at most limit.
func (d *drainIO) waitFor(limit time.Duration) {
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		d.mu.Lock()
		n := len(d.pending)
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-d.idle:
		case <-t.C:
			return
		case <-d.closed:
			return
		}
	}
}
