package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
)

// toolctl creates the permission buckets "when no worker has yet"
// (env.store, NewKVStore with nil: the default 24h). An operator setting
// a session's mode before the fleet starts (a provisioning script) thus
// fixes the approvals bucket at 24h, and every worker configured with
// permissions.approval_ttl: 72h then fails to start ("bucket keeps ... for
// 24h0m0s, not the 72h0m0s asked for"); before this change it started.
// toolctl run before the workers created the approvals bucket with 24 h,
// and a worker with approval_ttl 72h then failed to start.
func TestToolctlFirstKeepsWorkerTTL(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	var so, se bytes.Buffer
	if code := run(ctx, []string{"--nats", s.ClientURL(), "mode", "--session", "s1", "explore"}, nil, &so, &se); code != exitOK {
		t.Fatalf("toolctl mode: exit %d\n%s%s", code, so.String(), se.String())
	}
	js := natstest.JS(t, natstest.Connect(t, s))
	// The worker's mount (cmd/worker/mount_permission.go) with approval_ttl: 72h.
	if _, err := permission.NewKVStore(ctx, js, &permission.KVConfig{ApprovalTTL: 72 * time.Hour}); err != nil {
		t.Fatalf("a worker with approval_ttl 72h after `toolctl mode`: %v", err)
	}
}
