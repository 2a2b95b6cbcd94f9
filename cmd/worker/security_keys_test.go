package main_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSecurityBucketKeys: a bucket's stream information, asked with a
// subjects filter, names every key the bucket holds: another caller's
// session names and kept results' call ids. A caller may not ask for it;
// it still reads its own groups, kept results and mode without it.
func TestSecurityBucketKeys(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	ctx := secureCtx(t)
	bob, _, _ := f.caller(t, "bob")
	if r := bob.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "bobs-secret-plan", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("bob's reset_tools: %+v", r)
	}
	if r := bob.Invoke(ctx, toolkit.ToolCall{ID: "bobs-secret-call", Name: "echo", Input: map[string]any{"text": "x"}, KeepResult: true}); r.State != toolkit.StateSuccess {
		t.Fatalf("bob's kept call: %+v", r)
	}
	alice, anc, av := f.caller(t, "alice")
	var mu sync.Mutex
	var answers []string
	sub, err := anc.Subscribe(wire.Inbox("alice")+"info.*", func(m *nats.Msg) {
		mu.Lock()
		answers = append(answers, string(m.Data))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for _, b := range []string{wire.BucketGroups, wire.BucketPermissions, wire.BucketResults} {
		subject := "$JS.API.STREAM.INFO.KV_" + b
		if err := anc.PublishRequest(subject, wire.Inbox("alice")+"info."+b, []byte(`{"subjects_filter":">"}`)); err != nil {
			t.Fatal(err)
		}
		anc.Flush()
		natstest.WaitFor(t, "the server to answer or refuse alice's "+subject, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(answers) > 0 || av.refused(subject)
		})
		mu.Lock()
		for _, a := range answers {
			if strings.Contains(a, ".bob.") {
				t.Errorf("alice learned bob's keys from %s: %s", subject, a)
			}
		}
		answers = nil
		mu.Unlock()
	}

	// Alice's own reads need none of it.
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "mine", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	if groups, err := alice.ActiveGroups(ctx, "mine", alice.Revision("mine")); err != nil || len(groups) != 1 {
		t.Errorf("alice's groups: %v, %v", groups, err)
	}
	// A revision the bucket never wrote: she learns its last one from a
	// consumer of her own keys, and fails at once.
	if _, err := alice.ActiveGroups(ctx, "mine", alice.Revision("mine")+1<<20); !errors.Is(err, bus.ErrStaleGroupState) || !strings.Contains(err.Error(), "past the bucket's last revision") {
		t.Errorf("alice's groups at a made-up revision: %v", err)
	}
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "alices-call", Name: "echo", Input: map[string]any{"text": "kept"}, KeepResult: true}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's kept call: %+v", r)
	}
	if r := alice.Result(ctx, "alices-call"); r.State != toolkit.StateSuccess || r.Text() != "kept" {
		t.Errorf("alice's kept result: %+v", r)
	}
	if r := alice.Result(ctx, "bobs-secret-call"); r.State == toolkit.StateSuccess {
		t.Errorf("alice read bob's kept result: %+v", r)
	}
	as := []string{"--nkey", f.auth + "/caller-alice.nk", "--identity", "alice"}
	if out, se, code := toolctl(t, f.url, append(as, "mode", "--session", "mine")...); code != 0 || !strings.Contains(out, "mode not set") {
		t.Errorf("toolctl mode as alice: exit %d\n%s%s", code, out, se)
	}
	if out, se, code := toolctl(t, f.url, append(as, "tools", "--session", "mine")...); code != 0 || !strings.Contains(out, "write_text_file") {
		t.Errorf("toolctl tools --session as alice: exit %d\n%s%s", code, out, se)
	}
}
