package wire

import (
	"errors"
	"fmt"
	"slices"

	"github.com/toolbus/toolbus/toolkit"
)

// The messages of the wire contract. Each struct's tags are its one field
// list: the msgpack codec in wire_gen.go is generated from them (go
// generate), encoding/json reads the json tags, and the differential tests
// check the generated codec against the msgpack library's reflection on
// the same tags. A message type is marked with a //wire:message line.

// Request is the body of a call published on SubjectCallPrefix + tool.
//
//wire:message
type Request struct {
	// ID is the call id: required, one subject token ([A-Za-z0-9_-]+, at
	// most MaxCallIDLen bytes) because cancels are addressed by it.
	ID string `json:"id" msgpack:"id"`
	// Name is optional; when set it must equal the tool named by the
	// subject.
	Name string `json:"name,omitempty" msgpack:"name,omitempty"`
	// Input is the tool's arguments, a JSON object.
	Input map[string]any `json:"input,omitempty" msgpack:"input,omitempty"`
	// RawInput is the arguments as the model wrote them, instead of
	// Input: the worker parses and repairs it (toolkit.ParseRawInput).
	RawInput string `json:"raw_input,omitempty" msgpack:"raw_input,omitempty"`
	// Session keys group activation; reset_tools requires one.
	Session string `json:"session,omitempty" msgpack:"session,omitempty"`
	// Key is the call's idempotency key when it differs from ID: a call
	// sent again (a retry on another worker) is a new id but the same key,
	// which the tool sees (toolkit.ToolCall.Key).
	Key string `json:"key,omitempty" msgpack:"key,omitempty"`
	// More says the caller reads chunk frames that carry more chunks
	// (Frame.More): a burst of chunks then travels in one message.
	// Without it every chunk comes in a frame of its own.
	More bool `json:"more,omitempty" msgpack:"more,omitempty"`
}

// Kind is the kind of a reply frame.
type Kind string

// Frame kinds.
const (
	// KindChunk carries a delta of the tool's output.
	KindChunk Kind = "chunk"
	// KindProgress carries a UI-only progress report, never part of the
	// result.
	KindProgress Kind = "progress"
	// KindHeartbeat says the call is still running; it has no payload.
	KindHeartbeat Kind = "heartbeat"
	// KindQueued says the call is in the durable queue (the calls stream):
	// a worker will take it when it has room, and until its first attempt
	// starts, silence is no lost worker. It has no payload.
	KindQueued Kind = "queued"
	// KindAsk carries a request the tool makes of its caller (Ask:
	// elicitation/create, sampling/createMessage); the caller answers on
	// Ask.Reply with an Answer. Never part of the result.
	KindAsk Kind = "ask"
	// KindLog carries a log message the tool sends its caller
	// (toolkit.Log; MCP notifications/message), never part of the result.
	KindLog Kind = "log"
	// KindFinal ends the call; exactly one is sent per call.
	KindFinal Kind = "final"
)

// Frame is one reply message of a call. Exactly one of Chunk, Progress,
// Log, Ask and Final is set, according to Kind (none for a heartbeat); Check says
// whether a decoded frame keeps that rule.
//
// The worker's instance travels in the final's metadata (MetaWorker)
// without being put in the response's map: AppendFrame writes it.
//
//wire:message
type Frame struct {
	Kind Kind   `json:"kind" msgpack:"kind"`
	ID   string `json:"id" msgpack:"id"`
	// Seq numbers the frames of one call 1, 2, 3, ... across all kinds;
	// the final has the highest.
	Seq   uint64         `json:"seq" msgpack:"seq"`
	Chunk *toolkit.Chunk `json:"chunk,omitempty" msgpack:"chunk,omitempty"`
	// More, on a chunk frame, are further chunks that follow Chunk: a
	// burst of chunks travels in one message, to a caller whose request
	// said it reads them (Request.More). Each takes the next sequence
	// number, so the frame covers Seq to Last().
	More     []toolkit.Chunk     `json:"more,omitempty" msgpack:"more,omitempty"`
	Progress *toolkit.Progress   `json:"progress,omitempty" msgpack:"progress,omitempty"`
	Log      *toolkit.LogMessage `json:"log,omitempty" msgpack:"log,omitempty"`
	Ask      *Ask                `json:"ask,omitempty" msgpack:"ask,omitempty"`
	Final    *toolkit.Response   `json:"final,omitempty" msgpack:"final,omitempty" wire:"extra=metadata"`
	// Chunks, on a final, is the number of chunks sent before it (those
	// in More included).
	// Zero means Final.Content is the complete result; otherwise
	// Final.Content is empty and the result is the accumulation of those
	// chunks.
	Chunks uint64 `json:"chunks,omitempty" msgpack:"chunks,omitempty"`
	// Attempt, on the frames of a durable call, is which delivery of the
	// call they belong to (1, 2, ...); each attempt numbers its frames
	// from 1 again. Zero on the core path.
	Attempt uint64 `json:"attempt,omitempty" msgpack:"attempt,omitempty"`
	// MaxAttempts, on durable frames, is how many deliveries a call gets
	// at most.
	MaxAttempts uint64 `json:"max_attempts,omitempty" msgpack:"max_attempts,omitempty"`
	// RedeliverMS, on durable frames, is how long after the worker's last
	// sign of life the call is delivered again when the worker is lost.
	RedeliverMS uint64 `json:"redeliver_ms,omitempty" msgpack:"redeliver_ms,omitempty"`
	// Stream, on a queued frame, is the call's sequence in the calls
	// stream; zero when unknown. The caller of a call its worker queued
	// (durable by default) reads the queue's progress past it as it does
	// for a call it queued itself: a call the queue is done with, of which
	// no final came and none is kept, will not be delivered again.
	Stream uint64 `json:"stream,omitempty" msgpack:"stream,omitempty"`
}

// Last is the sequence number of the frame's last chunk: Seq, plus one
// per chunk in More.
func (f *Frame) Last() uint64 { return f.Seq + uint64(len(f.More)) }

// Check reports whether a decoded frame is well formed: a known kind, a
// sequence number, the payload its kind calls for, a final's code and its
// chunks' and final's states from the closed sets (a state may be left
// out).
func (f *Frame) Check() error {
	if f.Seq == 0 {
		return errors.New("frame without a sequence number")
	}
	n := 0
	for _, set := range [...]bool{f.Chunk != nil, f.Progress != nil, f.Log != nil, f.Ask != nil, f.Final != nil} {
		if set {
			n++
		}
	}
	if len(f.More) > 0 && f.Kind != KindChunk {
		return fmt.Errorf("%s frame with more chunks", f.Kind)
	}
	if f.Last() < f.Seq {
		return errors.New("frame whose chunks run past the last sequence number")
	}
	if f.Chunk != nil && !knownState(f.Chunk.State) {
		return fmt.Errorf("chunk with unknown state %q", f.Chunk.State)
	}
	for i := range f.More {
		if !knownState(f.More[i].State) {
			return fmt.Errorf("chunk with unknown state %q", f.More[i].State)
		}
	}
	if f.Final != nil && !knownState(f.Final.State) {
		return fmt.Errorf("final with unknown state %q", f.Final.State)
	}
	var ok bool
	switch f.Kind {
	case KindChunk:
		ok = f.Chunk != nil && n == 1
	case KindProgress:
		ok = f.Progress != nil && n == 1
	case KindLog:
		ok = f.Log != nil && n == 1 && slices.Contains(toolkit.LogLevels, f.Log.Level)
	case KindAsk:
		ok = f.Ask != nil && n == 1 && f.Ask.Method != "" && ValidAnswerSubject(f.Ask.Reply)
	case KindHeartbeat, KindQueued:
		ok = n == 0
	case KindFinal:
		ok = f.Final != nil && n == 1
		if ok && f.Final.Code != "" && !f.Final.Code.Valid() {
			return fmt.Errorf("final frame with unknown code %q", f.Final.Code)
		}
	default:
		return fmt.Errorf("unknown frame kind %q", f.Kind)
	}
	if !ok {
		return fmt.Errorf("%s frame with the wrong payload", f.Kind)
	}
	return nil
}

// Ask is a request a tool makes of its caller, in MCP's terms: Method is
// the MCP method (elicitation/create, sampling/createMessage), Params its
// params as MCP has them. The caller answers with an Answer on Reply
// (SubjectAnswerPrefix + the worker's instance + "." + a token).
type Ask struct {
	Method string `json:"method" msgpack:"method"`
	Params any    `json:"params,omitempty" msgpack:"params,omitempty"`
	Reply  string `json:"reply" msgpack:"reply"`
}

// Answer is a caller's answer to an Ask: the MCP result, or an error the
// tool gets (e.g. the caller cannot answer that method).
//
//wire:message
type Answer struct {
	Result any    `json:"result,omitempty" msgpack:"result,omitempty"`
	Error  string `json:"error,omitempty" msgpack:"error,omitempty"`
}

// ListRequest is the body of a SubjectList request.
//
//wire:message
type ListRequest struct {
	Session string `json:"session,omitempty" msgpack:"session,omitempty"`
}

// ListReply answers a ListRequest.
//
//wire:message
type ListReply struct {
	// Worker is the instance that answered.
	Worker string `json:"worker" msgpack:"worker"`
	// Tools names every tool the worker serves, reset_tools included when
	// it has groups, whatever the session's activation.
	Tools []string `json:"tools" msgpack:"tools"`
	// Schemas are the function schemas the session may see now.
	Schemas []toolkit.FunctionSchema `json:"schemas" msgpack:"schemas"`
	// Error is set (and the rest empty) when the state could not be read.
	Error string `json:"error,omitempty" msgpack:"error,omitempty"`
}

// Announcement is what a worker publishes on AnnounceSubject(instance)
// and answers on SubjectDiscover: who the instance is and what it serves.
//
//wire:message
type Announcement struct {
	// Format is AnnounceFormat.
	Format int `json:"v" msgpack:"v"`
	// Instance identifies the worker process: one subject token.
	Instance string `json:"instance" msgpack:"instance"`
	// Version is the worker's (or its tools') version, free-form.
	Version string `json:"version,omitempty" msgpack:"version,omitempty"`
	// Queue is the queue group the instance serves calls in.
	Queue string `json:"queue,omitempty" msgpack:"queue,omitempty"`
	// Incarnation is a random id of the announcer's run, new each time a
	// process starts announcing under Instance; EpochMS is when it started
	// (Unix milliseconds, by its own clock), and Seq counts its messages
	// from 1. Together, Incarnation and EpochMS name the run (older
	// announcers send no Incarnation: EpochMS alone names theirs); Seq
	// orders the messages of one run. Fleets never compare EpochMS
	// between runs: machines' clocks disagree.
	Incarnation string `json:"incarnation,omitempty" msgpack:"incarnation,omitempty"`
	EpochMS     int64  `json:"epoch_ms" msgpack:"epoch_ms"`
	Seq         uint64 `json:"seq" msgpack:"seq"`
	// IntervalMS is the announcer's repeat interval in milliseconds; a
	// fleet derives the instance's TTL from it.
	IntervalMS int64 `json:"interval_ms" msgpack:"interval_ms"`
	// Goodbye is set on the last message of a stopping instance; its
	// groups and tools are empty.
	Goodbye bool `json:"goodbye,omitempty" msgpack:"goodbye,omitempty"`
	// Groups are the instance's non-basic groups, in registration order.
	Groups []AnnouncedGroup `json:"groups" msgpack:"groups"`
	// Tools are the instance's tools in registration order (reset_tools
	// is not listed: it exists whenever Groups is not empty).
	Tools []AnnouncedTool `json:"tools" msgpack:"tools"`
	// Meta holds what other packages announce about the worker, each
	// under its own key (MetaSkills, MetaPermissions), as JSON-shaped
	// values; absent when empty.
	Meta map[string]any `json:"meta,omitempty" msgpack:"meta,omitempty"`
}

// AnnouncedGroup is a tool group as announced.
type AnnouncedGroup struct {
	Name         string `json:"name" msgpack:"name"`
	Description  string `json:"description" msgpack:"description"`
	Instructions string `json:"instructions,omitempty" msgpack:"instructions,omitempty"`
	// Active is the group's state for sessions without stored state.
	Active bool `json:"active,omitempty" msgpack:"active,omitempty"`
}

// AnnouncedTool is a tool as announced: its schema as the model sees it
// (presets removed, extensions added) and its flags.
type AnnouncedTool struct {
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description" msgpack:"description"`
	// Group is "basic" or one of the announcement's groups.
	Group           string `json:"group" msgpack:"group"`
	ReadOnly        bool   `json:"read_only,omitempty" msgpack:"read_only,omitempty"`
	ConcurrencySafe bool   `json:"concurrency_safe,omitempty" msgpack:"concurrency_safe,omitempty"`
	// Idempotency is toolkit.Idempotency's String: "unknown",
	// "no_side_effects" or "idempotent".
	Idempotency string `json:"idempotency" msgpack:"idempotency"`
	// Parameters is the JSON schema of the input (type object).
	Parameters map[string]any `json:"parameters" msgpack:"parameters"`
	// Order is the declaration order of Parameters' keys
	// (toolkit.KeyOrder): the schema's JSON follows it.
	Order []toolkit.KeyOrder `json:"order,omitempty" msgpack:"order,omitempty"`
	// Conditional says the tool is listed only while one of ListedWith
	// ("basic" or groups of the announcement) is basic or active for
	// the session (toolkit.ListedWith): the skill viewer, while a skill
	// is visible.
	Conditional bool     `json:"conditional,omitempty" msgpack:"conditional,omitempty"`
	ListedWith  []string `json:"listed_with,omitempty" msgpack:"listed_with,omitempty"`
	// Kind is what its builder declared it to be (toolkit.Tool.Kind:
	// "shell", "file_write", "mcp", …; "" for a function tool), so that a
	// client tells which calls of it the permission checks can allow.
	Kind string `json:"kind,omitempty" msgpack:"kind,omitempty"`
}

// IdempotencyLevel parses Idempotency; an unknown string is
// toolkit.IdempotencyUnknown.
func (t AnnouncedTool) IdempotencyLevel() toolkit.Idempotency {
	switch t.Idempotency {
	case toolkit.NoSideEffects.String():
		return toolkit.NoSideEffects
	case toolkit.Idempotent.String():
		return toolkit.Idempotent
	}
	return toolkit.IdempotencyUnknown
}

// SkillRequest asks a worker (SkillSubject) for the body of one of its
// skills, for one of the files in the skill's directory (File: a
// slash-separated path relative to it), or for the list of those files
// (ListFiles).
//
//wire:message
type SkillRequest struct {
	Name      string `json:"name" msgpack:"name"`
	Group     string `json:"group,omitempty" msgpack:"group,omitempty"`
	File      string `json:"file,omitempty" msgpack:"file,omitempty"`
	ListFiles bool   `json:"list_files,omitempty" msgpack:"list_files,omitempty"`
}

// SkillReply answers a SkillRequest: the markdown body; a file as Text
// (UTF-8) or Blob (base64) with its MIMEType; the skill's files
// (Truncated when there were more than skill.MaxFiles); or why there is
// none.
//
//wire:message
type SkillReply struct {
	Markdown  string   `json:"markdown,omitempty" msgpack:"markdown,omitempty"`
	Text      string   `json:"text,omitempty" msgpack:"text,omitempty"`
	Blob      string   `json:"blob,omitempty" msgpack:"blob,omitempty"`
	MIMEType  string   `json:"mime_type,omitempty" msgpack:"mime_type,omitempty"`
	Files     []string `json:"files,omitempty" msgpack:"files,omitempty"`
	Truncated bool     `json:"truncated,omitempty" msgpack:"truncated,omitempty"`
	Error     string   `json:"error,omitempty" msgpack:"error,omitempty"`
}

// MCPRequest asks a worker (MCPSubject) to pass one request on to an MCP
// server it mounts: Method is resources/list, resources/templates/list,
// resources/read, resources/subscribe, prompts/list, prompts/get or
// completion/complete,
// Params its MCP params (JSON-shaped), Server the server's configured
// name. ID, when set, names the request for its cancel: an MCPRequest
// with Method MCPCancelled and no reply subject, whose Params'
// "requestId" is that ID, ends the request of the same server and ID
// still running on the worker.
//
//wire:message
type MCPRequest struct {
	Server string         `json:"server" msgpack:"server"`
	Method string         `json:"method" msgpack:"method"`
	Params map[string]any `json:"params,omitempty" msgpack:"params,omitempty"`
	ID     string         `json:"id,omitempty" msgpack:"id,omitempty"`
}

// MCPCancelled is the Method of an MCPRequest that cancels an earlier
// one (MCP's own name for a cancel).
const MCPCancelled = "notifications/cancelled"

// MCPReply answers an MCPRequest: the server's result, or an error. Code
// is the JSON-RPC error code the server answered with (such as -32002,
// resource not found); 0 when the worker could not get an answer (no
// such server, the server unreachable, the reply too large).
//
//wire:message
type MCPReply struct {
	Result map[string]any `json:"result,omitempty" msgpack:"result,omitempty"`
	Code   int64          `json:"code,omitempty" msgpack:"code,omitempty"`
	Error  string         `json:"error,omitempty" msgpack:"error,omitempty"`
}

// MCPUpdate tells gateways (MCPUpdatedSubject) that a resource of a
// worker's MCP server changed (notifications/resources/updated): the
// server subscribed to it on a gateway's behalf (resources/subscribe).
//
//wire:message
type MCPUpdate struct {
	Server string `json:"server" msgpack:"server"`
	URI    string `json:"uri" msgpack:"uri"`
}

// HeadersRequest replaces the headers a worker sends to one of its HTTP
// MCP servers (HeadersSubject); empty Headers restore the configured ones.
//
//wire:message
type HeadersRequest struct {
	Server  string            `json:"server" msgpack:"server"`
	Headers map[string]string `json:"headers" msgpack:"headers"`
}

// HeadersReply answers a HeadersRequest.
//
//wire:message
type HeadersReply struct {
	OK    bool   `json:"ok" msgpack:"ok"`
	Error string `json:"error,omitempty" msgpack:"error,omitempty"`
}

// knownState reports whether s is a state of the closed set, or none.
func knownState(s toolkit.State) bool { return s == "" || s.Valid() }
