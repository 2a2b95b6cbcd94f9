package wire

import (
	"strconv"
	"strings"

	"github.com/toolbus/toolbus/toolkit"
)

// The wire contract, version 1: every subject, header, bucket name,
// content type and metadata key that crosses NATS. subjects.md describes
// each one; TestSubjectsMatchWire keeps the two equal. A change to any of
// them is a change of Version.

// Version is the version of the wire contract. Requests send it in
// HeaderVersion; a worker refuses a request whose version it does not
// speak.
const Version = "1"

// Subjects. A prefix ends in a dot and is followed by one subject token.
// Calls, cancels and listings come in two forms: anonymous, and on behalf
// of a caller identity, whose token ends (or, for cancels, starts) the
// subject. NATS permissions let a caller publish only its own identity's
// subjects, so a worker can trust the identity it reads there: it scopes
// the caller's sessions by it and replies only under its inbox.
const (
	// SubjectCallPrefix + tool name is where anonymous calls are
	// published, and + tool name + "." + identity a caller's calls;
	// workers queue-subscribe both for every tool they serve.
	SubjectCallPrefix = "tools.call."
	// SubjectCancelPrefix + call id cancels an anonymous call, and +
	// identity + "." + call id a call of that identity (only), with
	// HeaderVersion set to Version. Every worker listens to both with
	// wildcards, without a queue group.
	SubjectCancelPrefix = "tools.cancel."
	// SubjectCancelledPrefix + call id (or identity + "." + call id)
	// records the cancel of a durable call in the cancels stream
	// (StreamCancels), for a worker that takes the call from the queue
	// after the cancel went by: the client publishes it next to the cancel.
	SubjectCancelledPrefix = "tools.cancelled."
	// SubjectList is a request (queue group) answered by one worker with
	// its tool names and the schemas of a session's active tools.
	SubjectList = "tools.list"
	// SubjectListPrefix + identity is SubjectList for a caller identity's
	// sessions.
	SubjectListPrefix = "tools.list."
	// SubjectAnnouncePrefix + instance id is where a worker publishes its
	// announcements; fleets subscribe to it with a wildcard.
	SubjectAnnouncePrefix = "tools.announce."
	// SubjectDiscover is a request every worker answers (no queue group)
	// with its announcement.
	SubjectDiscover = "tools.discover"
	// SubjectSkillPrefix + instance id is where a worker answers requests
	// for the bodies of the skills it declares.
	SubjectSkillPrefix = "tools.skill."
	// SubjectMCPPrefix + instance id is where a worker with MCP servers
	// passes requests for their resources, prompts and completions on to
	// them (MCPRequest); the gateway sends them.
	SubjectMCPPrefix = "tools.mcp."
	// SubjectControlPrefix + instance id + "." + control name addresses
	// one worker's control requests, such as ControlHeaders.
	SubjectControlPrefix = "tools.control."
	// SubjectDurablePrefix + tool name (+ "." + identity) is where durable
	// calls are published: into the calls stream (StreamCalls), from which
	// workers pull them when they have room.
	SubjectDurablePrefix = "tools.durable."
	// SubjectPinnedPrefix + instance id + "." + tool name (+ "." +
	// identity) reaches one worker: the one a session's calls of a
	// session-bound tool are pinned to (PinnedSubject). The worker
	// subscribes to its own instance's subjects without a queue group;
	// SubjectPinnedPrefix + instance id alone is the probe other workers
	// send to learn whether it is alive.
	SubjectPinnedPrefix = "tools.pinned."
	// SubjectAnswerPrefix + instance id + "." + token is where a caller
	// answers a tool's request (a Frame of KindAsk names the subject): the
	// worker instance subscribes to SubjectAnswerPrefix + instance + ".*".
	SubjectAnswerPrefix = "tools.answer."
	// SubjectServicePrefix starts the subjects of the NATS services
	// protocol (`nats micro`): $SRV.<verb>, $SRV.<verb>.<service> and
	// $SRV.<verb>.<service>.<instance> for the verbs PING, INFO and STATS.
	// Every worker answers them (no queue group) for ServiceName.
	SubjectServicePrefix = "$SRV."
	// ServiceName is the name workers answer under in the NATS services
	// protocol: one service, one instance per worker, one endpoint per
	// tool.
	ServiceName = "toolbus"
)

// StreamCalls is the JetStream work-queue stream of durable calls.
const StreamCalls = "toolbus_calls"

// StreamCancels is the JetStream stream of durable calls' cancels
// (SubjectCancelledPrefix), kept as long as a call waits in StreamCalls.
const StreamCancels = "toolbus_cancels"

// StreamExhausted is the JetStream work-queue stream that keeps the calls
// stream's max-deliveries advisories until a worker has answered their
// calls, also those published while no worker was up.
const StreamExhausted = "toolbus_exhausted"

// MCPUpdated ends the subject (SubjectMCPPrefix + instance + "." +
// MCPUpdated) on which a worker publishes the resource updates of the MCP
// servers it mounts (MCPUpdate); gateways subscribe to them all.
const MCPUpdated = "updated"

// ControlHeaders is the control name of runtime-header rotations for a
// worker's HTTP MCP servers: HeadersSubject.
const ControlHeaders = "mcp_headers"

// CancelReasonDeadline is the body of a cancel sent because the caller's
// deadline passed: the call then ends with code timeout rather than
// interrupted. An empty body means the caller cancelled; any other body
// is no cancel.
const CancelReasonDeadline = "deadline"

// Headers. NATS header names are case-sensitive; these are sent exactly
// as written.
const (
	// HeaderVersion carries Version on requests. Absent means "1"; the Go
	// client leaves it out, like every header that would say the default,
	// so that a plain call is a plain PUB. A cancel, a durable call's
	// cancel record and a kept result carry it always: without it they
	// are none (a server's answer a caller had stored or sent there).
	HeaderVersion = "Toolbus-Version"
	// HeaderContentType set to ContentTypeJSON on a request asks for JSON
	// bodies both ways; absent (or ContentTypeMsgpack) means msgpack. JSON
	// replies carry it too.
	HeaderContentType = "Content-Type"
	// HeaderTimeout is the time the caller still allows the call, in
	// whole milliseconds, measured when the request is published. The
	// worker enforces it (the call ends with code timeout).
	HeaderTimeout = "Toolbus-Timeout"
	// HeaderReply is the caller's reply subject on a durable call (the
	// message's own reply subject belongs to JetStream's acknowledgement)
	// and on a call passed on with HeaderUnserved (the message's own is
	// the passing worker's, for the server's no-responders status); and,
	// on a cancel (tools.cancel.…), the reply subject of the call it
	// cancels: a worker then cancels, or leaves a tombstone for, that call
	// only, and not a later call under the same id (one without it
	// cancels any call under its id); and, on a kept final,
	// the reply subject of the call that kept it, which tells its caller
	// that final from one an earlier call under the same id kept.
	HeaderReply = "Toolbus-Reply"
	// HeaderHeartbeat is the heartbeat interval the caller asks for, in
	// milliseconds; the worker clamps it to [MinHeartbeat, MaxHeartbeat].
	// Absent means the default of one second.
	HeaderHeartbeat = "Toolbus-Heartbeat"
	// HeaderGroupsRevision is the group-state revision returned by the
	// session's last reset_tools; it becomes ToolCall.GroupsRevision.
	HeaderGroupsRevision = "Toolbus-Groups-Revision"
	// HeaderKeepResult set to "1" asks the worker to store the call's
	// final in BucketResults, where the caller can fetch it by call id
	// (after losing its connection, say) until the bucket's TTL. Set to a
	// call id (a retry, sent under an id of its own), it asks for the
	// final to be stored under that id.
	HeaderKeepResult = "Toolbus-Keep-Result"
	// HeaderAttempt, on a core call's kept final (worker to results
	// bucket), is which attempt of the call it is: 1 as its caller sent
	// it, n for its client's nth sending; on a durable call's, its
	// delivery. A later attempt's kept final is not replaced by an
	// earlier one's.
	HeaderAttempt = "Toolbus-Attempt"
	// HeaderRan, "1" on a kept final, says the call's tool was entered
	// and the call did not succeed: a final approval_required, or denied
	// for an approval, that the tool itself ended its call with, which is
	// not one that ended the call without running it (the same id may
	// not be sent again to run).
	HeaderRan = "Toolbus-Ran"
	// HeaderPinLost on a call of a session-bound tool says the worker the
	// session was pinned to did not answer (the caller's publish to its
	// PinnedSubject found no responder): the receiving worker takes the
	// session over at once instead of forwarding the call there. A worker
	// passing a call on to the session's worker (HeaderForwarded) drops it.
	HeaderPinLost = "Toolbus-Pin-Lost"
	// HeaderForwarded marks a call one worker passed on to the worker its
	// session is pinned to; it is never forwarded again.
	HeaderForwarded = "Toolbus-Forwarded"
	// HeaderUnserved marks a call a worker passed on to its tool's queue
	// group because it no longer serves the tool (removed while the call
	// was on its way there); its value is that worker's instance. Such a
	// call is never passed on again: a worker without the tool answers it
	// not_found.
	HeaderUnserved = "Toolbus-Unserved"
	// HeaderSeqAfter on a forwarded call is the last sequence number the
	// worker that passed it on sent the caller (heartbeats while it looked
	// for the session's worker); the pinned worker numbers its frames
	// after it.
	HeaderSeqAfter = "Toolbus-Seq-After"
	// HeaderAsked, on a pending call (toolbus_approvals) restored after an
	// approval of it could not be written, is the revision of the ask it
	// restores (permission.Pending.Asked). A header, not a field of the
	// value: builds before it decode a pending call strictly.
	HeaderAsked = "Toolbus-Asked"
	// HeaderStatus is set by the NATS server on the empty reply it sends
	// when nobody subscribes to a request's subject (StatusNoResponders).
	HeaderStatus = "Status"
	// HeaderKVOperation marks the delete and purge markers of a JetStream
	// KV bucket ("DEL", "PURGE"), read when a key is fetched from the
	// stream leader.
	HeaderKVOperation = "KV-Operation"
)

// StatusNoResponders is HeaderStatus on the server's no-responders reply.
const StatusNoResponders = "503"

// Content types.
const (
	// ContentTypeJSON selects JSON bodies; it is matched on its prefix, so
	// "application/json; charset=utf-8" selects JSON too.
	ContentTypeJSON = "application/json"
	// ContentTypeMsgpack is the default encoding, also when the header is
	// absent.
	ContentTypeMsgpack = "application/msgpack"
)

// JetStream KV buckets (the defaults; each is configurable).
const (
	// BucketGroups holds the active tool groups of each session.
	BucketGroups = "toolbus_groups"
	// BucketPermissions holds each session's permission mode and rules.
	BucketPermissions = "toolbus_permissions"
	// BucketApprovals holds calls waiting for approval and one-shot
	// approvals.
	BucketApprovals = "toolbus_approvals"
	// BucketResults holds the finals of calls sent with HeaderKeepResult,
	// by call id (ResultKey).
	BucketResults = "toolbus_results"
	// BucketSessions holds the session pins: which worker instance serves
	// a session's calls of session-bound tools (SessionKey → instance id).
	BucketSessions = "toolbus_sessions"
	// BucketOAuth holds the OAuth grants of mounted MCP servers, by server
	// name: tokens and client credentials, for workers only.
	BucketOAuth = "toolbus_oauth"
)

// Metadata keys the bus adds to final responses.
const (
	// MetaWorker names the worker instance that ran the call.
	MetaWorker = "worker"
	// MetaLostChunks counts chunks the client never received (core
	// NATS is at-most-once); the content of such a response is incomplete.
	MetaLostChunks = "lost_chunks"
	// MetaRetryAfterMS is set on an overloaded answer: when a retry may
	// succeed, in milliseconds.
	MetaRetryAfterMS = toolkit.MetaRetryAfterMS
	// MetaGroupsRevision is set on a successful reset_tools: the new
	// state's revision, which the client sends with the session's later
	// calls (HeaderGroupsRevision).
	MetaGroupsRevision = toolkit.MetaGroupsRevision
	// MetaActiveGroups is set on a successful reset_tools: the session's
	// active groups now.
	MetaActiveGroups = toolkit.MetaActiveGroups
	// MetaAttempts is set by the client on a call it sent more than once
	// (a retry after worker_lost, overloaded or MetaDrained): how many times.
	MetaAttempts = "attempts"
	// MetaToolRan, true, is set by the worker on the final of a call
	// whose tool was entered (however its middleware handed the call on,
	// but for the one way toolkit.Call says hides it: toolkit.RanWriter)
	// and that did not succeed (never on a success):
	// its code is the tool's, or came after the tool ran, even
	// one the bus or the permission checks answer without running it
	// (approval_required, unavailable, overloaded, not_found). The
	// worker drops the key from what its tool and middleware write.
	MetaToolRan = "tool_ran"
	// MetaDrained, true, is set by the worker on an interrupted final of
	// a call its stop ended (its grace period over, cause
	// toolkit.ErrDraining, notice toolkit.DrainedText), run or not: not
	// the caller's cancel. The Go client sends such a call of a read-only
	// or idempotent tool again as it does one whose worker was lost.
	// Only the worker sets it: it drops the key from what its tool and
	// middleware write (a chunk's metadata, a *toolkit.Error's), so no
	// tool can have its call sent again by claiming a stop.
	MetaDrained = "drained"
	// MetaSessionWorker is set on the final of a session-bound tool's
	// call: the worker instance its session (or the default session, for
	// a call without one) is pinned to. The
	// client sends the session's next calls of such tools there.
	MetaSessionWorker = "session_worker"
	// MetaSessionMovedFrom is set when the call re-pinned its session: the
	// instance it was pinned to before, which is gone. State kept there
	// (files, processes) may be lost; the final's content says so too.
	MetaSessionMovedFrom = "session_moved_from"
	// MetaPermissionReason is set by the permission checks on a denied or
	// approval_required final: the step that decided (package permission).
	MetaPermissionReason = "permission_reason"
	// PermissionApprovalMismatch is MetaPermissionReason on the denied
	// final of a call that presented the approval of its id with another
	// tool or input: it did not run, and the approval stays for the
	// approved call, which may still be sent under that id.
	PermissionApprovalMismatch = "approval mismatch"
	// PermissionUserDenied is MetaPermissionReason on the denied final of
	// a call a user refused (toolctl deny) and that was sent again with
	// the same tool and input: it did not run, and does not ask again.
	PermissionUserDenied = "user denied"
)

// Announcement metadata keys: the parts of an announcement that other
// packages publish (Announcement.Meta).
const (
	// MetaSkills is the worker's skills (package skill).
	MetaSkills = "skills"
	// MetaPermissions is the worker's permission defaults (package
	// permission).
	MetaPermissions = "permissions"
	// MetaMCPServers is the MCP servers the worker mounts and is
	// connected to, with what they offer besides tools (package mcp).
	MetaMCPServers = "mcp_servers"
	// MetaDurable is true when the worker takes durable calls of its
	// tools from the calls stream (package bus).
	MetaDurable = "durable"
)

// AnnounceFormat is the version of the announcement schema, sent in its
// "v" field. Readers accept any version ≥ 1 and ignore unknown fields.
const AnnounceFormat = 1

// Limits.
const (
	// MaxCallIDLen bounds the length of a call id.
	MaxCallIDLen = 128
	// MaxDepth bounds the nesting of arrays and maps in a body.
	MaxDepth = 64
	// MaxSessionKeyLen is the longest encoded KV key of a session (see
	// SessionKey), far below the server's 4 KiB control-line limit.
	MaxSessionKeyLen = 1024
	// MaxReplyLen is the longest reply subject a worker answers on: a
	// caller names it in a header of a durable or passed-on call
	// (HeaderReply), as long as it likes, and a publish to a subject
	// past the server's control line (4 KiB) makes the server close the
	// publisher's connection.
	MaxReplyLen = 1024
)

// InboxPrefix starts every subject a worker replies on: a reply subject
// elsewhere (a KV key, another tool's subject) is refused. A caller with
// an identity has its inbox under InboxPrefix + identity + ".".
const InboxPrefix = "_INBOX."

// CallSubject is the subject a call of tool by identity ("" for an
// anonymous call) is published on.
func CallSubject(tool, identity string) string {
	if identity == "" {
		return SubjectCallPrefix + tool
	}
	return SubjectCallPrefix + tool + "." + identity
}

// CancelSubject is the subject that cancels the call id of identity.
func CancelSubject(identity, id string) string {
	if identity == "" {
		return SubjectCancelPrefix + id
	}
	return SubjectCancelPrefix + identity + "." + id
}

// CancelledSubject is the subject that records the cancel of the durable
// call id of identity.
func CancelledSubject(identity, id string) string {
	if identity == "" {
		return SubjectCancelledPrefix + id
	}
	return SubjectCancelledPrefix + identity + "." + id
}

// ListSubject is the listing subject of identity.
func ListSubject(identity string) string {
	if identity == "" {
		return SubjectList
	}
	return SubjectListPrefix + identity
}

// Inbox is the inbox prefix of identity's replies (with a trailing dot).
func Inbox(identity string) string {
	if identity == "" {
		return InboxPrefix
	}
	return InboxPrefix + identity + "."
}

// ValidIdentity reports whether identity can name a caller: one token of
// [A-Za-z0-9_-], at most MaxCallIDLen bytes.
func ValidIdentity(identity string) bool { return ValidCallID(identity) }

// ReplyAllowed reports whether a worker may reply on subject to a caller
// of identity: only under that caller's inbox. An anonymous caller's inbox
// is all of InboxPrefix, identities' inboxes included: nats.go's own
// inboxes (_INBOX.<nuid>.) cannot be told from an identity's. With the
// roles of package auth only the gateway, the workers and the operator
// publish anonymous calls. A subject longer than MaxReplyLen is nobody's
// inbox.
func ReplyAllowed(subject, identity string) bool {
	prefix := Inbox(identity)
	return len(subject) > len(prefix) && len(subject) <= MaxReplyLen && subject[:len(prefix)] == prefix
}

// ResultKey is the key of a kept result in BucketResults: the call id, or
// identity + "." + the call id for a caller identity's call.
func ResultKey(identity, id string) string {
	if identity == "" {
		return id
	}
	return identity + "." + id
}

// PinnedSubject is the subject a call of tool by identity ("" for an
// anonymous call) is published on to reach the worker instance only.
func PinnedSubject(instance, tool, identity string) string {
	s := SubjectPinnedPrefix + instance + "." + tool
	if identity != "" {
		s += "." + identity
	}
	return s
}

// DurableSubject is the subject a durable call of tool by identity ("" for
// an anonymous call) is published on.
func DurableSubject(tool, identity string) string {
	if identity == "" {
		return SubjectDurablePrefix + tool
	}
	return SubjectDurablePrefix + tool + "." + identity
}

// AnnounceSubject is the subject instance announces itself on.
func AnnounceSubject(instance string) string { return SubjectAnnouncePrefix + instance }

// SkillSubject is the subject instance serves its skills' bodies on.
func SkillSubject(instance string) string { return SubjectSkillPrefix + instance }

// MCPSubject is the subject instance passes requests to its MCP servers
// on.
func MCPSubject(instance string) string { return SubjectMCPPrefix + instance }

// MCPUpdatedSubject is the subject instance publishes its MCP servers'
// resource updates on.
func MCPUpdatedSubject(instance string) string {
	return SubjectMCPPrefix + instance + "." + MCPUpdated
}

// AnswerSubject is where a caller answers the request token of a tool on
// instance.
func AnswerSubject(instance, token string) string {
	return SubjectAnswerPrefix + instance + "." + token
}

// ValidAnswerSubject reports whether subject can be where a caller
// answers a tool's request (an ask frame's reply): AnswerSubject of an
// instance id (a token of at most toolkit.MaxNameLen bytes) and a token
// of at most MaxCallIDLen bytes. The caller publishes there: a longer
// subject makes the server close its connection (max_control_line), a
// wildcard or another shape names no request.
func ValidAnswerSubject(subject string) bool {
	rest, ok := strings.CutPrefix(subject, SubjectAnswerPrefix)
	instance, token, two := strings.Cut(rest, ".")
	return ok && two && toolkit.ValidToolName(instance) && ValidCallID(token)
}

// HeadersSubject is the control subject on which instance takes runtime
// headers for its HTTP MCP servers.
func HeadersSubject(instance string) string {
	return SubjectControlPrefix + instance + "." + ControlHeaders
}

// ValidCallID reports whether id can address a cancel subject: one token
// of [A-Za-z0-9_-], at most MaxCallIDLen bytes.
func ValidCallID(id string) bool {
	return len(id) <= MaxCallIDLen && toolkit.ValidName(id)
}

// Quote quotes a name a caller gave (a call id, identity, key or
// session) for an error message, cut after MaxCallIDLen bytes: an invalid
// one may be as long as a message, and its error need not be.
func Quote(s string) string {
	if len(s) <= MaxCallIDLen {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:MaxCallIDLen]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
