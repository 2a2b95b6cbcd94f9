package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// sessionWorkers starts n worker processes with the file tools, each with
// its own workspace unless shared, on the NATS server of a host worker
// that serves only sleep (so any of them can die without the bus).
func sessionWorkers(t *testing.T, n int, shared, perSession bool) (url string, ws []*worker) {
	t.Helper()
	host := filepath.Join(t.TempDir(), "host.yaml")
	mustWrite(t, host, "builtins:\n  tools: [{name: sleep}]\n")
	url = startWorker(t, "--instance", "w0", "--config", host).url
	common := t.TempDir()
	for i := range n {
		dir := common
		if !shared {
			dir = t.TempDir()
		}
		cfg := filepath.Join(t.TempDir(), "w.yaml")
		mustWrite(t, cfg, fmt.Sprintf("builtins:\n  workspace: %s\n  shared_workspace: %v\n  per_session_workspace: %v\n", dir, shared, perSession))
		ws = append(ws, startWorker(t, "--config", cfg, "--instance", fmt.Sprint("w", i+1), "--nats", url))
	}
	return url, ws
}

// TestSessionsFileTools: the file tools on several workers, each with its
// own workspace, behave as one machine: what a session wrote it reads,
// whichever worker the queue group hands the call to, and sessions do
// not see each other's files.
func TestSessionsFileTools(t *testing.T) {
	// Each session in its own directory of its worker's workspace.
	url, _ := sessionWorkers(t, 3, false, true)

	// The repro, as a new user types it: one write, eight views, each a
	// new toolctl (which remembers nothing).
	if out, se, code := toolctl(t, url, "call", "write_text_file", `{"file_path":"notes.txt","content":"hello"}`); code != 0 {
		t.Fatalf("write: exit %d\n%s%s", code, out, se)
	}
	for i := range 8 {
		out, se, code := toolctl(t, url, "call", "view_text_file", `{"file_path":"notes.txt"}`)
		if code != 0 || !strings.Contains(out, "hello") {
			t.Fatalf("view %d of 8: exit %d\n%s%s", i+1, code, out, se)
		}
	}

	_, se, code := toolctl(t, url, "call", "-v", "view_text_file", `{"file_path":"notes.txt"}`)
	if code != 0 || !strings.Contains(se, "toolctl: session (default) is pinned to worker w") {
		t.Fatalf("call -v: exit %d\n%s", code, se)
	}

	// 50 sessions at once, each writing then reading its own file; half
	// read through a client that knows the pin, half through one that
	// does not (the queue group's worker passes the call on).
	var wg sync.WaitGroup
	var mu sync.Mutex
	var mismatches []string
	for i := range 50 {
		wg.Go(func() {
			session, text := fmt.Sprint("agent-", i), fmt.Sprint("note of agent ", i)
			c, err := bus.NewClient(natstest.URLConn(t, url), nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			fail := func(what string, r *toolkit.Response) {
				mu.Lock()
				mismatches = append(mismatches, fmt.Sprintf("%s %s: %s %v", session, what, r.Text(), r.Metadata))
				mu.Unlock()
			}
			if r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "write_text_file", Session: session,
				Input: map[string]any{"file_path": "mine.txt", "content": text}}); r.State != toolkit.StateSuccess {
				fail("write", r)
				return
			}
			reader := c
			if i%2 == 1 {
				if reader, err = bus.NewClient(natstest.URLConn(t, url), nil); err != nil {
					t.Error(err)
					return
				}
				defer reader.Close()
			}
			r := callOnce(t, secureCtx(t), reader, toolkit.ToolCall{Name: "view_text_file", Session: session, Input: map[string]any{"file_path": "mine.txt"}})
			if !strings.Contains(r.Text(), text) {
				fail("read", r)
			}
		})
	}
	wg.Wait()
	if len(mismatches) > 0 {
		t.Fatalf("%d of 50 sessions read something else:\n%s", len(mismatches), strings.Join(mismatches, "\n"))
	}

	out, se, code := toolctl(t, url, "sessions", "--json")
	var pins []struct {
		Session string   `json:"session"`
		Worker  string   `json:"worker"`
		Groups  []string `json:"active_groups"`
	}
	if err := json.Unmarshal([]byte(out), &pins); code != 0 || err != nil || len(pins) != 51 {
		t.Fatalf("sessions --json: exit %d, %d sessions, %v\n%s%s", code, len(pins), err, out, se)
	}
	per := map[string]int{}
	for _, p := range pins {
		per[p.Worker]++
		if !slices.Contains([]string{"w1", "w2", "w3"}, p.Worker) {
			t.Errorf("session %q: %+v", p.Session, p)
		}
	}
	t.Logf("sessions per worker: %v", per)
	if out, _, code := toolctl(t, url, "sessions"); code != 0 || !strings.Contains(out, "SESSION") || !strings.Contains(out, "agent-7") {
		t.Errorf("sessions: exit %d\n%s", code, out)
	}
}

// TestSessionsMove kills a session's worker with SIGKILL: its next call
// moves the session to another worker and says so. With a shared
// workspace the file written before is still there.
func TestSessionsMove(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			url, ws := sessionWorkers(t, 3, shared, false)
			c, err := bus.NewClient(natstest.URLConn(t, url), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "write_text_file", Session: "s1",
				Input: map[string]any{"file_path": "kept.txt", "content": "before the kill"}})
			pinned, _ := r.Metadata[wire.MetaSessionWorker].(string)
			if shared {
				if pinned != "" {
					t.Fatalf("a shared workspace pins nothing: %v", r.Metadata)
				}
				// The worker that wrote it goes.
				pinned, _ = r.Metadata[wire.MetaWorker].(string)
			}
			if pinned == "" {
				t.Fatalf("no worker named in %v", r.Metadata)
			}
			for _, w := range ws {
				if w.instance == pinned {
					w.cmd.Process.Kill()
					w.exit(t)
				}
			}
			r = callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "view_text_file", Session: "s1", Input: map[string]any{"file_path": "kept.txt"}})
			if shared {
				if !strings.Contains(r.Text(), "before the kill") || r.Metadata[wire.MetaSessionMovedFrom] != nil {
					t.Fatalf("shared workspace after the kill: %s %v", r.Text(), r.Metadata)
				}
				return
			}
			moved, _ := r.Metadata[wire.MetaSessionWorker].(string)
			if r.Metadata[wire.MetaSessionMovedFrom] != pinned || moved == "" || moved == pinned ||
				!strings.Contains(r.Text(), "moved from worker "+pinned) {
				t.Fatalf("after its worker's kill: %s %v", r.Text(), r.Metadata)
			}
			// The session lives on where it moved.
			callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "write_text_file", Session: "s1",
				Input: map[string]any{"file_path": "kept.txt", "content": "after"}})
			if r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "view_text_file", Session: "s1", Input: map[string]any{"file_path": "kept.txt"}}); !strings.Contains(r.Text(), "after") || r.Metadata[wire.MetaSessionWorker] != moved {
				t.Fatalf("after the move: %s %v", r.Text(), r.Metadata)
			}
		})
	}
}
