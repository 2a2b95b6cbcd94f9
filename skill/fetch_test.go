package skill_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// Two workers declare the same skill; the one whose id sorts first is
// frozen (its connection stalls, its subscriptions stay on the server, as
// for a paused or cut-off process, still within its TTL). Fetching the
// body must get it from the other worker, not spend the whole context on
// the frozen one: the worker's Skill tool passes the call's context,
// which often has no deadline, so the call hangs with heartbeats going.
func TestFetchSkipsFrozenInstance(t *testing.T) {
	s := natstest.Embedded(t, true)
	p := natstest.ProxyTo(t, s)
	root := t.TempDir()
	tk, set := skillWorker(t, root)

	frozen := natstest.URLConn(t, p.URL())
	if _, err := skill.Serve(frozen, "w0", set, nil); err != nil {
		t.Fatal(err)
	}
	announce(t, frozen, tk, "w0", time.Hour, set)
	live := natstest.Connect(t, s)
	if _, err := skill.Serve(live, "w1", set, nil); err != nil {
		t.Fatal(err)
	}
	announce(t, live, tk, "w1", time.Hour, set)
	f := fleet(t, natstest.Connect(t, s))
	natstest.WaitFor(t, "w0 and w1", func() bool { return len(f.Instances()) == 2 })
	group, instances, ok := skill.Sources(f, "pdf", nil)
	if !ok || len(instances) != 2 {
		t.Fatalf("Sources: %v %v", instances, ok)
	}

	p.Pause()
	t.Cleanup(p.Resume)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	body, err := skill.Fetch(ctx, natstest.Connect(t, s), instances, "pdf", group)
	took := time.Since(start)
	if err != nil || !strings.Contains(body, "# PDF") || took > 12*time.Second {
		t.Fatalf("Fetch from %v with w0 frozen: body %q, err %v after %v; want w1's body at once", instances, body, err, took.Round(time.Millisecond))
	}
}

// A skill file (under the 512 KiB file limit) whose reply does not fit
// the server's max_payload: the worker cannot answer, and says nothing,
// so the asker waits for its whole context. The contract gives every
// request an answer ({"error": REASON} at worst), as the MCP subject does
// for "the result larger than the maximum payload".
func TestSkillReplyOverMaxPayload(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 64 << 10 })
	root := t.TempDir()
	_, set := skillWorker(t, root)
	if err := os.WriteFile(filepath.Join(root, "basic", "pdf", "forms.txt"), []byte(strings.Repeat("x", 100<<10)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := skill.Serve(natstest.Conn(t, s), "w1", set, nil); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Conn(t, s)
	// Control: the listing answers.
	files, _, err := skill.FetchFiles(natstest.Ctx(t), nc, []string{"w1"}, "pdf", toolkit.BasicGroup)
	if err != nil || len(files) != 1 {
		t.Fatalf("FetchFiles: %v %v", files, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = skill.FetchFile(ctx, nc, []string{"w1"}, "pdf", toolkit.BasicGroup, "forms.txt")
	took := time.Since(start)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || took > 5*time.Second {
		t.Fatalf("FetchFile of a file too large for max_payload: err %v after %v; want the worker's error at once", err, took.Round(time.Millisecond))
	}
}

// A name declared in basic and in another group: a session with only
// basic active sees basic's skill (Sources names basic), so the worker
// must answer for basic's, although the other group's replaces it where
// every group is visible.
func TestServeSameNameInTwoGroups(t *testing.T) {
	s := natstest.Embedded(t, true)
	root := t.TempDir()
	_, set := skillWorker(t, root)
	writeSkill(t, filepath.Join(root, "web", "pdf"), "pdf", "Fill PDF forms on the web.", "# Web PDF")
	if _, err := skill.Serve(natstest.Connect(t, s), "w1", set, nil); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	for group, want := range map[string]string{toolkit.BasicGroup: "# PDF", "web": "# Web PDF"} {
		body, err := skill.Fetch(natstest.Ctx(t), nc, []string{"w1"}, "pdf", group)
		if err != nil || body != want {
			t.Errorf("Fetch(pdf, %s) = %q, %v; want %q", group, body, err, want)
		}
	}
}
