package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestChaosKillWorkerMetaLeaderDown: a worker process is killed (SIGKILL)
// mid-batch at the moment the node leading the cluster's JetStream meta
// group goes down (a new meta leader is elected). Every call ends once;
// durable calls of the read-only sleep all complete; durable shell
// commands (not idempotent: each run appends its id to a shared file) run
// at most once, and end with their output or worker_lost; core calls end
// with their result or worker_lost.
func TestChaosKillWorkerMetaLeaderDown(t *testing.T) {
	if testing.Short() {
		t.Skip("worker processes on a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, `builtins:
  workspace: `+ws+`
  shared_workspace: true
  tools: [{name: sleep}, {name: execute_shell_command, group: basic}]
permissions:
  mode: bypass
durable:
  ack_wait: 2s
  replicas: 3
`)
	w1 := clusterWorker(t, cl, cfg, "w1")
	clusterWorker(t, cl, cfg, "w2")
	leader := -1
	for i, s := range cl.Nodes() {
		if s.JetStreamIsLeader() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no meta leader")
	}
	// The caller is on a node that stays up.
	nc := natstest.URLConn(t, cl.Nodes()[(leader+1)%3].ClientURL())
	c, err := bus.NewClient(nc, &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitInstances(t, c, "w1", "w2")

	runs := filepath.Join(ws, "runs.log")
	var calls []toolkit.ToolCall
	for i := range 10 {
		id := fmt.Sprint("shell-", i)
		calls = append(calls,
			toolkit.ToolCall{ID: id, Name: "execute_shell_command", Durable: true,
				Input: map[string]any{"command": "echo " + id + " >> runs.log; sleep 1; echo ran " + id}},
			toolkit.ToolCall{ID: fmt.Sprint("dsleep-", i), Name: "sleep", Durable: true, Input: map[string]any{"seconds": 1}},
			toolkit.ToolCall{ID: fmt.Sprint("csleep-", i), Name: "sleep", Input: map[string]any{"seconds": 1}})
	}
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for deadline := time.Now().Add(guard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(runs); strings.Count(string(b), "\n") >= 4 {
				break
			}
		}
		w1.cmd.Process.Kill()
		cl.Stop(leader)
		clusterWorker(t, cl, cfg, "w3")
	}()
	finals := make([]*toolkit.Response, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			n := 0
			for ev := range c.Call(ctx, call) {
				if ev.Final != nil {
					n++
					finals[i] = ev.Final
				}
			}
			if n != 1 {
				t.Errorf("%s: %d finals", call.ID, n)
			}
		})
	}
	wg.Wait()
	<-killed
	// A shell command of a killed worker may still run for its second.
	time.Sleep(1500 * time.Millisecond)
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		ran[line]++
	}
	tally := map[string]int{}
	for i, call := range calls {
		r := finals[i]
		if r == nil {
			continue
		}
		kind := "core"
		if call.Durable {
			kind = "durable"
		}
		tally[fmt.Sprintf("%s %s %s", kind, call.Name, codeOrOK(r.Code))]++
		if r.Code != "" {
			t.Logf("%s: %s (%d runs): %q", call.ID, r.Code, ran[call.ID], r.Text())
		}
		switch {
		case r.ID != call.ID:
			t.Errorf("%s: final of %s", call.ID, r.ID)
		case call.Name == "execute_shell_command" && ran[call.ID] > 1:
			t.Errorf("%s: a shell command ran %d times", call.ID, ran[call.ID])
		case call.Name == "execute_shell_command" && r.Code == "" && (ran[call.ID] != 1 || !strings.Contains(r.Text(), "ran "+call.ID)):
			t.Errorf("%s: a success after %d runs: %q", call.ID, ran[call.ID], r.Text())
		case call.Durable && call.Name == "sleep" && r.Code != "":
			t.Errorf("%s: a durable call of a read-only tool ended %s: %q", call.ID, r.Code, r.Text())
		case r.Code != "" && r.Code != toolkit.CodeWorkerLost:
			t.Errorf("%s: ended %s: %q", call.ID, r.Code, r.Text())
		}
	}
	t.Logf("finals: %v", tally)
}

func codeOrOK(c toolkit.Code) string {
	if c == "" {
		return "ok"
	}
	return string(c)
}
