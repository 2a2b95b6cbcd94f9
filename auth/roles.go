// Package auth defines who may do what on a toolbus bus, as NATS
// permissions, and writes them as a nats-server configuration with one
// nkey per user (Init, `toolctl auth init`).
//
// Four roles:
//
//   - A caller (one per identity, e.g. one per agent) calls tools as its
//     identity, cancels its own calls, reads its own replies and its own
//     sessions' tool groups, and watches the fleet's announcements. It
//     cannot see calls, answer them, read or cancel another caller's, or
//     touch another caller's sessions.
//   - A worker serves calls and replies only into inboxes; it reads and
//     writes the group state and the approvals it needs (it never writes
//     sessions' permission modes and rules).
//   - A gateway (toolctl mcp serve) admits MCP clients by bearer token and
//     calls as the identity each token maps to: it may call, cancel and
//     read replies as any identity, and read every session's groups.
//   - An operator may do everything: approve calls, set modes and rules,
//     rotate the runtime headers of MCP mounts, read everything.
//
// The permissions lean on the subjects of package wire: a caller's calls,
// cancels and listings carry its identity in the subject, its replies
// come under wire.Inbox(identity), and its sessions' KV keys start with
// it (wire.ScopedKeyToken). Workers take the identity from the subject,
// so these permissions are what vouch for it.
package auth

import (
	"fmt"

	"github.com/toolbus/toolbus/bus/wire"
)

// Roles.
const (
	RoleCaller   = "caller"
	RoleWorker   = "worker"
	RoleOperator = "operator"
	RoleGateway  = "gateway"
)

// Permissions are the subjects a user may publish and subscribe to (NATS
// "allow" lists; everything else is denied).
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// buckets are the fleet's KV buckets (the default names).
var buckets = []string{wire.BucketGroups, wire.BucketPermissions, wire.BucketApprovals, wire.BucketResults, wire.BucketSessions, wire.BucketOAuth}

// stream is the JetStream stream behind a KV bucket.
func stream(bucket string) string { return "KV_" + bucket }

// Operator may publish and subscribe to everything.
func Operator() Permissions {
	return Permissions{Publish: []string{">"}, Subscribe: []string{">"}}
}

// Worker serves calls: it subscribes to calls, cancels, listings and the
// fleet's requests, replies into inboxes only (the reply subjects it
// answers), announces itself, and uses the fleet's KV buckets through the
// JetStream API; it writes the group state, approvals, results, sessions
// and OAuth grants buckets' keys but never the permission policies'. Only
// workers (and operators) read the OAuth grants.
func Worker() Permissions {
	pub := []string{
		wire.InboxPrefix + ">",
		// Passing on a call of a tool it no longer serves.
		wire.SubjectCallPrefix + ">",
		wire.SubjectAnnouncePrefix + ">",
		wire.SubjectDiscover,
		wire.SubjectSkillPrefix + ">",
		// Its MCP servers' resource updates.
		wire.MCPUpdatedSubject("*"),
		"$JS.API.INFO",
	}
	for _, b := range buckets {
		s := stream(b)
		pub = append(pub,
			"$JS.API.STREAM.CREATE."+s,
			"$JS.API.STREAM.INFO."+s,
			"$JS.API.STREAM.MSG.GET."+s,
			"$JS.API.DIRECT.GET."+s,
			"$JS.API.DIRECT.GET."+s+".>",
			"$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.DELETE."+s+".>",
			"$JS.FC."+s+".>",
		)
	}
	calls := wire.StreamCalls
	pub = append(pub,
		// The durable path: the calls stream, its consumers, pulls and acks,
		// and queueing a durable-by-default tool's call.
		"$JS.API.STREAM.CREATE."+calls,
		"$JS.API.STREAM.INFO."+calls,
		"$JS.API.CONSUMER.CREATE."+calls+".>",
		"$JS.API.CONSUMER.INFO."+calls+".>",
		"$JS.API.CONSUMER.MSG.NEXT."+calls+".>",
		"$JS.ACK."+calls+".>",
		// Answering a call whose deliveries ran out: read it, remove it.
		"$JS.API.STREAM.MSG.GET."+calls,
		"$JS.API.STREAM.MSG.DELETE."+calls,
		wire.SubjectDurablePrefix+">",
		// The cancels of durable calls, read by the worker that takes a
		// call from the queue after its cancel went by.
		"$JS.API.STREAM.CREATE."+wire.StreamCancels,
		"$JS.API.STREAM.INFO."+wire.StreamCancels,
		"$JS.API.STREAM.MSG.GET."+wire.StreamCancels,
		"$JS.API.DIRECT.GET."+wire.StreamCancels,
		"$JS.API.DIRECT.GET."+wire.StreamCancels+".>",
		// The kept max-deliveries advisories of the calls stream, taken
		// by the worker that answers the exhausted call.
		"$JS.API.STREAM.CREATE."+wire.StreamExhausted,
		"$JS.API.STREAM.INFO."+wire.StreamExhausted,
		"$JS.API.CONSUMER.CREATE."+wire.StreamExhausted+".>",
		"$JS.API.CONSUMER.INFO."+wire.StreamExhausted+".>",
		"$JS.API.CONSUMER.MSG.NEXT."+wire.StreamExhausted+".>",
		"$JS.ACK."+wire.StreamExhausted+".>",
		// Session affinity: probing and passing calls on to a session's
		// worker, and the pins.
		wire.SubjectPinnedPrefix+">",
		"$KV."+wire.BucketGroups+".>", "$KV."+wire.BucketApprovals+".>", "$KV."+wire.BucketResults+".>", "$KV."+wire.BucketSessions+".>",
		// Mounted MCP servers' OAuth grants, refreshed by whichever worker
		// finds the token expiring; no other role reads them.
		"$KV."+wire.BucketOAuth+".>")
	return Permissions{
		Publish: pub,
		Subscribe: []string{
			wire.SubjectCallPrefix + ">",
			wire.SubjectCancelPrefix + ">",
			wire.SubjectList,
			wire.SubjectListPrefix + "*",
			wire.SubjectDiscover,
			wire.SubjectPinnedPrefix + ">",
			wire.SubjectAnnouncePrefix + "*",
			wire.SubjectSkillPrefix + "*",
			wire.SubjectMCPPrefix + "*",
			wire.SubjectControlPrefix + ">",
			wire.SubjectServicePrefix + ">",
			wire.SubjectAnswerPrefix + "*.*",
			wire.InboxPrefix + ">",
			"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + calls + ".*",
		},
	}
}

// Gateway calls as any caller identity (its bearer tokens decide which),
// reads every session's groups (it watches them to keep MCP sessions'
// tool lists current) and the fleet's announcements, skill bodies and
// mounted MCP servers' resources and prompts,
// and approves the calls its MCP clients' people accept.
func Gateway() Permissions {
	groups, policies := stream(wire.BucketGroups), stream(wire.BucketPermissions)
	return Permissions{
		Publish: []string{
			wire.SubjectCallPrefix + ">",
			wire.SubjectCancelPrefix + ">",
			wire.SubjectCancelledPrefix + ">",
			wire.SubjectList,
			wire.SubjectListPrefix + "*",
			wire.SubjectDiscover,
			wire.SubjectSkillPrefix + "*",
			// Mounted MCP servers' resources, prompts and completions.
			wire.SubjectMCPPrefix + "*",
			wire.SubjectDurablePrefix + ">",
			wire.SubjectPinnedPrefix + ">",
			wire.SubjectAnswerPrefix + "*.*",
			"$JS.API.INFO",
			// Whether a worker has served a tool on the durable path.
			"$JS.API.CONSUMER.INFO." + wire.StreamCalls + ".*",
			"$JS.API.STREAM.CREATE." + groups,
			"$JS.API.STREAM.INFO." + groups,
			"$JS.API.DIRECT.GET." + groups + ".>",
			"$JS.API.CONSUMER.CREATE." + groups + ".>",
			"$JS.API.CONSUMER.DELETE." + groups + ".>",
			"$JS.FC." + groups + ".>",
			"$JS.API.STREAM.INFO." + policies,
			"$JS.API.DIRECT.GET." + policies + ".>",
			// Approving a call its MCP client's person accepted
			// (GatewayOptions.Approve): read the pending call, write the
			// approval.
			"$JS.API.STREAM.INFO." + stream(wire.BucketApprovals),
			"$JS.API.DIRECT.GET." + stream(wire.BucketApprovals) + ".>",
			"$KV." + wire.BucketApprovals + ".>",
		},
		Subscribe: []string{
			wire.InboxPrefix + ">",
			wire.SubjectAnnouncePrefix + "*",
			wire.MCPUpdatedSubject("*"),
		},
	}
}

// Caller is the role of one caller identity: its own calls, cancels,
// listings, replies and sessions, and the fleet's announcements and skill
// bodies. identity must be a valid wire identity.
func Caller(identity string) (Permissions, error) {
	if !wire.ValidIdentity(identity) {
		return Permissions{}, fmt.Errorf("auth: invalid caller identity %q: it must be 1-%d characters of [A-Za-z0-9_-]", identity, wire.MaxCallIDLen)
	}
	groups, policies := stream(wire.BucketGroups), stream(wire.BucketPermissions)
	own := func(bucket, keyPrefix string) string { return "$KV." + bucket + "." + keyPrefix + identity + ".>" }
	return Permissions{
		Publish: []string{
			wire.CallSubject("*", identity),
			wire.CancelSubject(identity, "*"),
			wire.CancelledSubject(identity, "*"),
			wire.ListSubject(identity),
			wire.SubjectDiscover,
			wire.SubjectSkillPrefix + "*",
			wire.DurableSubject("*", identity),
			wire.PinnedSubject("*", "*", identity),
			wire.AnswerSubject("*", "*"),
			"$JS.API.INFO",
			// Its own sessions' groups (and a watch on them, and a
			// consumer of them telling the bucket's last revision), and
			// its own sessions' permission policies, read only. Not the
			// buckets' stream information ($JS.API.STREAM.INFO): asked
			// with a subjects filter, it names every key in the bucket,
			// other identities' sessions and kept results among them.
			"$JS.API.DIRECT.GET." + groups + "." + own(wire.BucketGroups, ""),
			"$JS.API.CONSUMER.CREATE." + groups + ".*." + own(wire.BucketGroups, ""),
			"$JS.FC." + groups + ".>",
			"$JS.API.DIRECT.GET." + policies + "." + own(wire.BucketPermissions, "s."),
			// Its own kept results, read only: a right to write any key of
			// a shared bucket is a right to purge all of it (a rollup).
			"$JS.API.DIRECT.GET." + stream(wire.BucketResults) + "." + own(wire.BucketResults, ""),
			// Whether a worker has served a tool on the durable path (its
			// consumer of the calls stream): a durable call of a tool
			// nobody serves is answered not_found, not queued for good.
			"$JS.API.CONSUMER.INFO." + wire.StreamCalls + ".*",
		},
		Subscribe: []string{
			wire.Inbox(identity) + ">",
			wire.SubjectAnnouncePrefix + "*",
		},
	}, nil
}
