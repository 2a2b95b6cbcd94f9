package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
)

// toolctl run before the workers created the permission buckets with its
// own defaults: a worker with approval_ttl 72h then failed to start, and
// one with session_ttl 720h bound the 7-day policies bucket silently.
// toolctl creates no bucket now: setting a mode before any worker says
// so, and the worker's settings decide.
func TestToolctlFirstKeepsWorkerPolicyTTL(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	var so, se bytes.Buffer
	code := run(ctx, []string{"--nats", s.ClientURL(), "mode", "--session", "s1", "explore"}, nil, &so, &se)
	if code == exitOK || !strings.Contains(se.String(), "no worker with permissions has started") {
		t.Fatalf("toolctl mode before any worker: exit %d\n%s%s", code, so.String(), se.String())
	}
	js := natstest.JS(t, natstest.Connect(t, s))
	const want = 720 * time.Hour // the worker's state.session_ttl (mount_permission.go passes it as PolicyTTL)
	if _, err := permission.NewKVStore(ctx, js, &permission.KVConfig{PolicyTTL: want, ApprovalTTL: 72 * time.Hour}); err != nil {
		t.Fatalf("a worker with approval_ttl 72h after `toolctl mode`: %v", err)
	}
	b, err := js.KeyValue(ctx, wire.BucketPermissions)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != want {
		t.Fatalf("a worker with state.session_ttl %v after `toolctl mode` keeps sessions' modes and rules for %v", want, st.TTL())
	}
	so.Reset()
	se.Reset()
	if code := run(ctx, []string{"--nats", s.ClientURL(), "mode", "--session", "s1", "explore"}, nil, &so, &se); code != exitOK {
		t.Fatalf("toolctl mode once a worker made the buckets: exit %d\n%s%s", code, so.String(), se.String())
	}
}

// TestApproveBeforeAnyWorker: approving before any worker with
// permissions made the approvals bucket says so (KVConfig.BindOnly);
// it said the call was "never asked, expired, or already approved".
func TestApproveBeforeAnyWorker(t *testing.T) {
	s := natstest.Embedded(t, true)
	var so, se bytes.Buffer
	code := run(natstest.Ctx(t), []string{"--nats", s.ClientURL(), "approve", "c1"}, nil, &so, &se)
	if code == exitOK || !strings.Contains(se.String(), "no worker with permissions has started") {
		t.Fatalf("toolctl approve before any worker: exit %d\n%s%s", code, so.String(), se.String())
	}
}
