package bus

import "github.com/toolbus/toolbus/toolkit"

// The wire contract, version 1. Everything a client in another language
// needs is named here and described in subjects.md; a change to any of it
// is a change of WireVersion.

// WireVersion is the version of the wire contract. Requests send it in
// HeaderVersion; a worker rejects a request whose version it does not
// speak.
const WireVersion = "1"

// Subjects.
const (
	// SubjectCallPrefix + tool name is where calls are published; workers
	// queue-subscribe to one subject per tool they serve.
	SubjectCallPrefix = "tools.call."
	// SubjectCancelPrefix + call id cancels a call. Every worker listens
	// (no queue group) on SubjectCancelPrefix + "*".
	SubjectCancelPrefix = "tools.cancel."
	// SubjectList is a request (queue group) answered by one worker with
	// its tool names and the schemas of a session's active tools.
	SubjectList = "tools.list"
)

// CancelReasonDeadline is the body of a cancel sent because the caller's
// deadline passed: the call then ends with code timeout rather than
// interrupted. Any other body (usually empty) means the caller cancelled.
const CancelReasonDeadline = "deadline"

// Headers. NATS header names are case-sensitive; these are sent exactly
// as written.
const (
	// HeaderVersion carries WireVersion on requests. Absent means "1"; the
	// Go client leaves it out, like every header that would say the
	// default, so that a plain call is a plain PUB.
	HeaderVersion = "Toolbus-Version"
	// HeaderContentType set to ContentTypeJSON on a request asks for JSON
	// bodies both ways; absent (or ContentTypeMsgpack) means msgpack. JSON
	// replies carry it too.
	HeaderContentType = "Content-Type"
	// HeaderTimeout is the time the caller still allows the call, in
	// whole milliseconds, measured when the request is published. The
	// worker enforces it (the call ends with code timeout).
	HeaderTimeout = "Toolbus-Timeout"
	// HeaderHeartbeat is the heartbeat interval the caller asks for, in
	// milliseconds; the worker clamps it to [MinHeartbeat, MaxHeartbeat].
	// Absent means DefaultHeartbeat (1s).
	HeaderHeartbeat = "Toolbus-Heartbeat"
	// HeaderGroupsRevision is the group-state revision returned by the
	// session's last reset_tools; it becomes ToolCall.GroupsRevision.
	HeaderGroupsRevision = "Toolbus-Groups-Revision"
)

// Content types.
const (
	ContentTypeJSON    = "application/json"
	ContentTypeMsgpack = "application/msgpack"
)

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
	// KindFinal ends the call; exactly one is sent per call.
	KindFinal Kind = "final"
)

// Metadata keys the bus adds to final responses.
const (
	// MetaWorker names the worker instance that ran the call.
	MetaWorker = "worker"
	// MetaLostChunks counts chunk frames the client never received (core
	// NATS is at-most-once); the content of such a response is incomplete.
	MetaLostChunks = "lost_chunks"
	// MetaRetryAfterMS is set on an overloaded answer: when a retry may
	// succeed, in milliseconds. (The toolkit uses the same key for
	// toolkit.Error.RetryAfter.)
	MetaRetryAfterMS = "retry_after_ms"
)

// Codes are the error codes that travel on final responses: exactly
// toolkit.Codes. The bus itself produces unavailable (no worker), overloaded
// (in-flight limit), worker_lost (stall timeout), invalid_input (a request
// that cannot be decoded or is incomplete), timeout and interrupted.
var Codes = toolkit.Codes
