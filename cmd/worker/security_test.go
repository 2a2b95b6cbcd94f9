package main_test

// The security suite: an attacker's tries at a worker process behind a
// real nats-server (the worker's embedded one) that runs the role
// configuration `toolctl auth init` writes. Each test is one item of the
// threat model in the README's "Security" section. Run it alone with
//
//	go test ./cmd/worker -run Security -v

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// secureFleet is a worker process on an embedded server with the roles of
// auth.Init: an operator, the worker, and the callers alice, bob and
// mallory.
type secureFleet struct {
	*worker
	auth string // the auth.Init directory
	ws   string // the worker's workspace
}

const secureConfig = `groups:
  - name: vault
    description: Secret tools.
builtins:
  workspace: ws
  tools:
    - name: echo
    - name: sleep
    - name: view_text_file
    - name: insert_text_file
    - name: write_text_file
      group: vault
`

func startSecureFleet(t *testing.T, yaml string, args ...string) *secureFleet {
	t.Helper()
	dir := t.TempDir()
	setup, err := auth.Init(filepath.Join(dir, "auth"), []string{"alice", "bob", "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, yaml)
	w := startWorker(t, append([]string{"--config", cfg, "--server-config", setup.ServerConfig,
		"--nkey", filepath.Join(dir, "auth", "worker.nk"), "--instance", "secure-w"}, args...)...)
	return &secureFleet{worker: w, auth: filepath.Join(dir, "auth"), ws: ws}
}

// violations collects the permission violations the server reports to a
// connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	v.errs = append(v.errs, err.Error())
	v.mu.Unlock()
}

// wait waits for a violation naming subject.
func (v *violations) wait(t *testing.T, what, subject string) {
	t.Helper()
	natstest.WaitFor(t, what+" to be refused by the server", func() bool { return v.refused(subject) })
}

// refused reports whether the server reported a violation naming subject.
func (v *violations) refused(subject string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.errs {
		if strings.Contains(e, "Permissions Violation") && strings.Contains(e, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

// conn connects as a role: the operator, the worker, or a caller identity
// (with its inbox prefix, as toolctl --identity does).
func (f *secureFleet) conn(t *testing.T, role, identity string) (*nats.Conn, *violations) {
	t.Helper()
	n := config.NATS{NKeySeed: filepath.Join(f.auth, auth.SeedFile(role, identity)), Identity: identity}
	opts, err := n.Options()
	if err != nil {
		t.Fatal(err)
	}
	v := &violations{}
	nc, err := nats.Connect(f.url, append(opts, nats.ErrorHandler(v.handler))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, v
}

func (f *secureFleet) caller(t *testing.T, identity string) (*bus.Client, *nats.Conn, *violations) {
	t.Helper()
	nc, v := f.conn(t, auth.RoleCaller, identity)
	c, err := bus.NewClient(nc, &bus.ClientOptions{Identity: identity})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, nc, v
}

func secureCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

// TestSecurityUnauthenticated: without a key nobody gets on the bus.
func TestSecurityUnauthenticated(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	if nc, err := nats.Connect(f.url); err == nil {
		nc.Close()
		t.Fatal("an anonymous connection was admitted")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous connection: %v, want an authorization violation", err)
	}
	// toolctl without a key: refused credentials (exit 2), not an
	// unreachable server (5), which a script would retry.
	if _, se, code := toolctl(t, f.url, "call", "echo", `{"text":"x"}`); code != 2 || !strings.Contains(se, "--nkey FILE") {
		t.Errorf("toolctl without a key: exit %d, want 2 with a hint at --nkey:\n%s", code, se)
	}
}

// TestSecurityReplyInjection: a caller names a KV key as the reply subject
// of its call; the worker refuses to publish there (and could not: its
// role may not write session policies), and the victim's mode stays.
func TestSecurityReplyInjection(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	ctx := secureCtx(t)
	op, _ := f.conn(t, auth.RoleOperator, "")
	js, err := jetstream.New(op)
	if err != nil {
		t.Fatal(err)
	}
	store, err := permission.NewKVStore(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	guardOp, err := permission.NewGuard(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	victim := toolkit.SessionScope("bob", "work")
	if err := guardOp.SetMode(ctx, victim, permission.ModeExplore); err != nil {
		t.Fatal(err)
	}
	key, err := wire.SessionKey(victim)
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{
		"$KV." + wire.BucketPermissions + ".s." + key,
		"$KV." + wire.BucketGroups + "." + key,
		"$KV." + wire.BucketApprovals + ".approval." + key + ".c1",
	}

	alice, anc, _ := f.caller(t, "alice")
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "k1", Input: map[string]any{"text": `{"mode":"bypass"}`}})
	if err != nil {
		t.Fatal(err)
	}
	for _, reply := range append(targets, "_INBOX.bob.stolen") {
		if err := anc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", "alice"), Reply: reply, Data: body}); err != nil {
			t.Fatal(err)
		}
	}
	// Behind them on the same connection: once this is answered, the
	// injections were handled.
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "after"}}); r.Text() != "after" {
		t.Fatalf("alice's call after the injections: %+v", r)
	}
	if _, ok := f.stderr.wait(func(s string) bool { return strings.Contains(s, "outside the caller's inbox") }); !ok {
		t.Errorf("the worker did not log the refused reply subjects:\n%s", f.stderr)
	}
	sp, _, err := store.LoadSession(ctx, victim)
	if err != nil || sp.Mode != permission.ModeExplore {
		t.Fatalf("the victim's policy after the injection: %+v, %v", sp, err)
	}
	if kv, err := js.KeyValue(ctx, wire.BucketGroups); err == nil {
		if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("the victim's groups key was written: %v", err)
		}
	}

	// The worker role itself may not write policies, whatever a request
	// says.
	wnc, wv := f.conn(t, auth.RoleWorker, "")
	wnc.Publish(targets[0], []byte(`{"mode":"bypass"}`))
	wnc.Flush()
	wv.wait(t, "a policy write with the worker's key", targets[0])
}

// TestSecurityForgedFinals: another caller can neither see calls nor
// publish into a caller's inbox, so every final a caller gets is the
// worker's.
func TestSecurityForgedFinals(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	mnc, mv := f.conn(t, auth.RoleCaller, "mallory")
	forged, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, Seq: 1, Final: toolkit.Final("x", "", "forged")})
	answer := func(m *nats.Msg) {
		var req wire.Request
		if wire.CodecOf(m.Header).Unmarshal(m.Data, &req) == nil && m.Reply != "" {
			f, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: req.ID, Seq: 1, Final: toolkit.Final(req.ID, "", "forged")})
			mnc.Publish(m.Reply, f)
		}
	}
	for _, s := range []string{"tools.call.>", "tools.call.echo.alice", "_INBOX.>", "_INBOX.alice.>"} {
		if _, err := mnc.Subscribe(s, answer); err != nil {
			t.Fatal(err)
		}
		mnc.Flush()
		mv.wait(t, "mallory's subscription to "+s, s)
	}
	mnc.Publish("_INBOX.alice.guess.1", forged)
	mnc.Flush()
	mv.wait(t, "mallory's publish into alice's inbox", "_INBOX.alice.guess.1")
	for i := range 50 {
		text := fmt.Sprint("call ", i)
		r := alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": text}})
		if r.Text() != text || r.Metadata[wire.MetaWorker] != "secure-w" {
			t.Fatalf("alice's call %d: %+v", i, r)
		}
	}
}

// TestSecurityForeignCancels: only the caller cancels its calls.
func TestSecurityForeignCancels(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	mallory, mnc, mv := f.caller(t, "mallory")
	done := make(chan *toolkit.Response, 1)
	events := alice.Call(ctx, toolkit.ToolCall{ID: "k1", Name: "sleep", Input: map[string]any{"seconds": 30}})
	started := make(chan struct{})
	go func() {
		var final *toolkit.Response
		first := true
		for ev := range events {
			if first {
				close(started)
				first = false
			}
			final = ev.Final
		}
		done <- final
	}()
	<-started // the sleep's first progress: it runs
	for _, s := range []string{"tools.cancel.alice.k1", "tools.cancel.k1"} {
		mnc.Publish(s, nil)
		mnc.Flush()
		mv.wait(t, "mallory's cancel on "+s, s)
	}
	if err := mallory.Cancel("k1"); err != nil { // her own k1: none
		t.Fatal(err)
	}
	if r := mallory.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}}); r.Text() != "x" {
		t.Fatalf("mallory's echo: %+v", r)
	}
	select {
	case r := <-done:
		t.Fatalf("a foreign cancel ended alice's call: %+v", r)
	default:
	}
	if err := alice.Cancel("k1"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("alice's own cancel: %+v", r)
	}
}

// TestSecuritySessions: a caller's sessions are its own; another caller
// of the same session name sees and changes nothing of them, and cannot
// read or write their keys; no caller sets its own mode.
func TestSecuritySessions(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, anc, av := f.caller(t, "alice")
	bob, bnc, bv := f.caller(t, "bob")
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	if groups, err := alice.ActiveGroups(ctx, "s", 0); err != nil || len(groups) != 1 {
		t.Fatalf("alice's groups: %v, %v", groups, err)
	}
	if groups, err := bob.ActiveGroups(ctx, "s", 0); err != nil || len(groups) != 0 {
		t.Errorf("bob's session s: groups %v, %v", groups, err)
	}
	write := map[string]any{"file_path": filepath.Join(f.ws, "x.txt"), "content": "x"}
	if r := bob.Invoke(ctx, toolkit.ToolCall{Name: "write_text_file", Session: "s", Input: write}); r.Code != toolkit.CodeGroupInactive {
		t.Errorf("bob in alice's session: %+v", r)
	}

	aliceKey, _ := wire.SessionKey(toolkit.SessionScope("alice", "s"))
	bjs, err := jetstream.New(bnc)
	if err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = kv.Get(gctx, bjs, wire.BucketGroups, aliceKey)
	cancel()
	if err == nil {
		t.Error("bob read alice's groups")
	}
	bv.wait(t, "bob's read of alice's groups", "$JS.API.DIRECT.GET.KV_toolbus_groups.$KV.toolbus_groups."+aliceKey)
	bnc.Publish("$KV.toolbus_groups."+aliceKey, []byte(`[]`))
	bnc.Flush()
	bv.wait(t, "bob's write of alice's groups", "$KV.toolbus_groups."+aliceKey)
	if groups, err := alice.ActiveGroups(ctx, "s", 0); err != nil || len(groups) != 1 {
		t.Fatalf("alice's groups after bob's tries: %v, %v", groups, err)
	}
	// Nor does alice set her own mode: that is the operator's.
	own := "$KV.toolbus_permissions.s." + aliceKey
	anc.Publish(own, []byte(`{"mode":"bypass"}`))
	anc.Flush()
	av.wait(t, "alice's write of her own mode", own)
}

// TestSecurityExposure: the embedded server does not listen beyond
// loopback without authentication unless told to: the worker refuses to
// start (a usage error, also found by --check-config) and names the flag
// that insists.
func TestSecurityExposure(t *testing.T) {
	for _, check := range []bool{false, true} {
		args := []string{"--listen", "0.0.0.0:0", "--store-dir", t.TempDir()}
		if check {
			args = append(args, "--check-config")
		}
		p := startProc(t, cleanEnv(t), workerBin, args...)
		out := p.stderr.String
		if code := p.exit(t); code != 2 || !strings.Contains(out(), "refusing to listen on 0.0.0.0:0 without authentication") ||
			!strings.Contains(out(), "--insecure") || strings.Count(strings.TrimSpace(out()), "\n") != 0 {
			t.Fatalf("%v: exit %d, want 2 and one line naming --insecure:\n%s", args, code, out())
		}
	}
	ws := filepath.Join(t.TempDir(), "ws.conf")
	mustWrite(t, ws, "websocket { host: 0.0.0.0, port: 18943, no_tls: true }\n")
	p := startProc(t, cleanEnv(t), workerBin, "--listen", "127.0.0.1:0", "--store-dir", t.TempDir(), "--server-config", ws)
	if code := p.exit(t); code != 2 || !strings.Contains(p.stderr.String(), "websocket listener") || !strings.Contains(p.stderr.String(), "--insecure") {
		t.Fatalf("a websocket listener on 0.0.0.0 without authentication: exit %d\n%s", code, p.stderr)
	}
	w := startWorker(t, "--listen", "0.0.0.0:0", "--store-dir", t.TempDir(), "--insecure")
	w.stop(t)
	dir := t.TempDir()
	setup, err := auth.Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	w = startWorker(t, "--listen", "0.0.0.0:0", "--store-dir", t.TempDir(), "--server-config", setup.ServerConfig, "--nkey", filepath.Join(dir, "worker.nk"))
	w.stop(t)
}

// TestSecurityMountedServers: a caller can neither ask a worker for its
// MCP servers' resources and prompts (the gateway's business) nor hear
// their resource updates; the gateway role can do both.
func TestSecurityMountedServers(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	_, anc, av := f.caller(t, "alice")
	anc.Publish(wire.MCPSubject("secure-w"), []byte(`{}`))
	av.wait(t, "a request for a mounted server's resources by a caller", wire.MCPSubject("secure-w"))
	if _, err := anc.SubscribeSync(wire.MCPUpdatedSubject("*")); err != nil {
		t.Fatal(err)
	}
	av.wait(t, "a caller's subscription to resource updates", wire.MCPUpdatedSubject("*"))

	// The gateway may ask: the request reaches the server, which finds
	// nobody there (this worker mounts no MCP server), not a violation.
	gnc, _ := f.conn(t, auth.RoleGateway, "")
	if _, err := gnc.RequestWithContext(secureCtx(t), wire.MCPSubject("secure-w"), mustMsgpack(t, &wire.MCPRequest{Server: "nope", Method: "resources/list"})); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("the gateway's request: %v, want no responders", err)
	}
	if _, err := gnc.SubscribeSync(wire.MCPUpdatedSubject("*")); err != nil {
		t.Fatal(err)
	}
	if err := gnc.Flush(); err != nil || gnc.LastError() != nil {
		t.Fatalf("the gateway's subscription to resource updates: %v, %v", err, gnc.LastError())
	}
}

// TestSecurityMismatchedPolicies: a worker that would check the fleet's
// tools differently does not join it.
func TestSecurityMismatchedPolicies(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	cfg := filepath.Join(t.TempDir(), "open.yaml")
	mustWrite(t, cfg, secureConfig)
	p := startProc(t, cleanEnv(t), workerBin, "--nats", f.url, "--nkey", filepath.Join(f.auth, "worker.nk"), "--config", cfg)
	if code := p.exit(t); code != 1 || !strings.Contains(p.stderr.String(), "the fleet checks permissions differently: instance secure-w") {
		t.Fatalf("a worker without permission checks joining a checking fleet: exit %d\n%s", code, p.stderr)
	}
	// The fleet's calls still all ask: default mode holds every write.
	alice, _, _ := f.caller(t, "alice")
	ctx := secureCtx(t)
	alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}})
	for i := range 20 {
		in := map[string]any{"file_path": filepath.Join(f.ws, fmt.Sprint(i, ".txt")), "content": "x"}
		if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "write_text_file", Session: "s", Input: in}); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("write %d: %+v", i, r)
		}
	}
}

// procStatus reads a process's resident memory (KiB) and thread count.
func procStatus(t *testing.T, pid int) (rssKiB, threads int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "VmRSS":
			rssKiB = n
		case "Threads":
			threads = n
		}
	}
	return rssKiB, threads
}

// deepJSON is a call body nested levels deep.
func deepJSON(id string, levels int) []byte {
	return []byte(`{"id":"` + id + `","input":{"text":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}}`)
}

// wideMsgpack is a call body of n one-byte elements (each elem) in one
// array: n empty maps inflate far more than 13x when decoded naively, n
// small integers 16x (within what a body may decode to, but a worker
// holding many at once would not be bounded).
func wideMsgpack(id string, n int, elem byte) []byte {
	b := []byte{0x82, 0xa2, 'i', 'd', 0xa0 | byte(len(id))}
	b = append(b, id...)
	b = append(b, 0xa5, 'i', 'n', 'p', 'u', 't', 0x81, 0xa4, 't', 'e', 'x', 't', 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	for range n {
		b = append(b, elem)
	}
	return b
}

// rawFinal publishes a hand-made call and returns its final frame's
// response, and the bytes of every frame.
func rawFinal(ctx context.Context, nc *nats.Conn, msg *nats.Msg) (*toolkit.Response, int, error) {
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		return nil, 0, err
	}
	defer sub.Unsubscribe()
	msg.Reply = sub.Subject
	if err := nc.PublishMsg(msg); err != nil {
		return nil, 0, err
	}
	size := 0
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, size, err
		}
		size += len(m.Data)
		var fr wire.Frame
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &fr); err != nil {
			return nil, size, err
		}
		if fr.Final != nil {
			return fr.Final, size, nil
		}
	}
}

// TestSecurityHostileBodies: 1,000 deep JSON bodies and 1,000 wide msgpack
// bodies are each refused with invalid_input, and the worker's memory and
// threads stay within a small constant of where they were.
func TestSecurityHostileBodies(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, anc, _ := f.caller(t, "alice")
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "warm"}}); r.Text() != "warm" {
		t.Fatalf("warm-up: %+v", r)
	}
	pid := f.cmd.Process.Pid
	rss0, threads0 := procStatus(t, pid)

	bodies := []struct {
		name string
		n    int
		hdr  nats.Header
		body func(i int) []byte
	}{
		{"deep JSON", 1000, nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}, func(i int) []byte { return deepJSON(fmt.Sprint("d", i), 9000) }},
		{"wide msgpack of maps", 1000, nil, func(i int) []byte { return wideMsgpack(fmt.Sprint("w", i), 900_000, 0x80) }},
		// These decode (16x is what a body may take), and slowly: fewer.
		{"wide msgpack of integers", 50, nil, func(i int) []byte { return wideMsgpack(fmt.Sprint("i", i), 900_000, 0x00) }},
	}
	for _, b := range bodies {
		n, window := b.n, 8
		var next atomic.Int64
		var wg sync.WaitGroup
		for range window {
			wg.Go(func() {
				for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
					body := b.body(i)
					// Each call has the guard: together they may take longer on a busy machine.
					cctx, cancel := context.WithTimeout(context.Background(), guard)
					r, size, err := rawFinal(cctx, anc, &nats.Msg{Subject: wire.CallSubject("echo", "alice"), Header: b.hdr, Data: body})
					cancel()
					if err != nil || r.Code != toolkit.CodeInvalidInput {
						t.Errorf("%s %d: %+v, %v", b.name, i, r, err)
						return
					}
					if size > 4<<10 { // the answer does not echo the body
						t.Errorf("%s %d: a %d-byte body answered with %d bytes", b.name, i, len(body), size)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	rss, threads := procStatus(t, pid)
	t.Logf("worker RSS %d → %d KiB, threads %d → %d", rss0, rss, threads0, threads)
	// Before the limits these took the worker to gigabytes. What stays
	// is the runtime's heap held for reuse, bounded by the worker's
	// MaxInputMemory (16 MiB of decoded requests at once) and the
	// garbage collector's headroom over it.
	if rss > rss0+128<<10 {
		t.Errorf("RSS grew from %d to %d KiB", rss0, rss)
	}
	if threads > threads0+8 {
		t.Errorf("threads grew from %d to %d", threads0, threads)
	}
	if r := alice.Invoke(secureCtx(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "still"}}); r.Text() != "still" {
		t.Fatalf("after the bodies: %+v", r)
	}
}

// TestSecurityFIFO: a FIFO in the workspace is refused at once, and 200
// tries leave no thread behind.
func TestSecurityFIFO(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	fifo := filepath.Join(f.ws, "pipe")
	if err := ostest.Mkfifo(t, fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "warm"}})
	pid := f.cmd.Process.Pid
	_, threads0 := procStatus(t, pid)
	for i := range 200 {
		name, in := "view_text_file", map[string]any{"file_path": fifo}
		if i%2 == 1 {
			name, in = "insert_text_file", map[string]any{"file_path": fifo, "content": "x", "line_number": 1}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a hang would end timeout, not invalid_input
		r := alice.Invoke(cctx, toolkit.ToolCall{Name: name, Input: in})
		cancel()
		if r.State != toolkit.StateError || r.Code == toolkit.CodeTimeout || !strings.Contains(r.Text(), "not a regular file") {
			t.Fatalf("%s on a FIFO: %+v", name, r)
		}
	}
	if _, threads := procStatus(t, pid); threads > threads0+4 {
		t.Errorf("threads grew from %d to %d", threads0, threads)
	}
}

// TestSecurityOverload: a burst of instant calls is no overload; calls
// past the real in-flight limit are answered overloaded, and only those.
func TestSecurityOverload(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	var overloaded, failed atomic.Int32
	var wg sync.WaitGroup
	for i := range 2000 {
		wg.Go(func() {
			r := alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": fmt.Sprint(i)}})
			switch {
			case r.Code == toolkit.CodeOverloaded:
				overloaded.Add(1)
			case r.State != toolkit.StateSuccess:
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if overloaded.Load() > 0 || failed.Load() > 0 {
		t.Fatalf("a burst of 2,000 instant calls: %d overloaded, %d failed", overloaded.Load(), failed.Load())
	}

	// A worker with a limit of 4: 4 sleeps run; the calls past them are
	// overloaded.
	const limit = 4
	f = startSecureFleet(t, secureConfig+fmt.Sprintf("middleware:\n  max_in_flight: %d\n", limit))
	alice, _, _ = f.caller(t, "alice")
	var running sync.WaitGroup
	sleeps := make([]<-chan *toolkit.Response, limit)
	for i := range limit {
		ch := make(chan *toolkit.Response, 1)
		sleeps[i] = ch
		started := make(chan struct{})
		running.Add(1)
		go func() {
			var final *toolkit.Response
			first := true
			for ev := range alice.Call(ctx, toolkit.ToolCall{ID: fmt.Sprint("s", i), Name: "sleep", Input: map[string]any{"seconds": 30}}) {
				if first {
					first = false
					running.Done()
					close(started)
				}
				final = ev.Final
			}
			ch <- final
		}()
		<-started
	}
	running.Wait()
	for i := range 3 {
		if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}}); r.Code != toolkit.CodeOverloaded {
			t.Errorf("call %d past the limit: %+v", i, r)
		}
	}
	for i := range limit {
		alice.Cancel(fmt.Sprint("s", i))
		if r := <-sleeps[i]; r.Code != toolkit.CodeInterrupted {
			t.Errorf("sleep %d: %+v", i, r)
		}
	}
}

// TestSecurityGoroutines: in a worker on a server with the roles, a burst
// of 2,000 slow calls and 20,000 bad requests leave no goroutines behind.
func TestSecurityGoroutines(t *testing.T) {
	dir := t.TempDir()
	setup, err := auth.Init(dir, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(&embedded.Options{ConfigFile: setup.ServerConfig, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	connect := func(role, identity string) *nats.Conn {
		n := config.NATS{NKeySeed: filepath.Join(dir, auth.SeedFile(role, identity)), Identity: identity}
		opts, err := n.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := srv.Connect(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("nap", "Sleeps a little.", func(ctx context.Context, in struct{}) (string, error) {
		time.Sleep(20 * time.Millisecond)
		return "up", nil
	})); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(connect(auth.RoleWorker, ""), tk, &bus.WorkerOptions{MaxInFlight: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	anc := connect(auth.RoleCaller, "alice")
	alice, err := bus.NewClient(anc, &bus.ClientOptions{Identity: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	ctx := secureCtx(t)
	alice.Invoke(ctx, toolkit.ToolCall{Name: "nap"})
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for range 2000 {
		wg.Go(func() {
			if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "nap"}); r.State != toolkit.StateSuccess {
				t.Errorf("nap: %+v", r)
			}
		})
	}
	wg.Wait()
	inbox := anc.NewInbox()
	for i := range 20000 {
		anc.PublishRequest(wire.CallSubject("nap", "alice"), inbox, []byte{0xc1, byte(i)})
	}
	anc.Flush()
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "nap"}); r.State != toolkit.StateSuccess {
		t.Fatalf("after the flood: %+v", r)
	}
	natstest.WaitFor(t, "the goroutines to come back to the baseline", func() bool { return runtime.NumGoroutine() <= base+16 })
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSecurityClients: toolctl calls as a caller with its key and
// identity; the MCP gateway, with the gateway role's key, admits an MCP
// client by bearer token, calls as the token's identity, and refuses
// clients without one.
func TestSecurityClients(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	as := func(role, identity string) []string {
		args := []string{"--nkey", filepath.Join(f.auth, auth.SeedFile(role, identity))}
		if identity != "" {
			args = append(args, "--identity", identity)
		}
		return args
	}
	out, se, code := toolctl(t, f.url, append(as(auth.RoleCaller, "alice"), "call", "echo", `{"text":"as alice"}`)...)
	if code != 0 || strings.TrimSpace(out) != "as alice" {
		t.Fatalf("toolctl as alice: exit %d\n%s%s", code, out, se)
	}
	out, se, code = toolctl(t, f.url, append(as(auth.RoleCaller, "alice"), "call", "--durable", "echo", `{"text":"durable as alice"}`)...)
	if code != 0 || strings.TrimSpace(out) != "durable as alice" {
		t.Fatalf("toolctl --durable as alice: exit %d\n%s%s", code, out, se)
	}
	// A kept result is alice's to fetch, not bob's.
	if out, se, code := toolctl(t, f.url, append(as(auth.RoleCaller, "alice"), "call", "--keep", "--id", "kept-1", "echo", `{"text":"kept"}`)...); code != 0 {
		t.Fatalf("toolctl call --keep: exit %d\n%s%s", code, out, se)
	}
	if out, se, code := toolctl(t, f.url, append(as(auth.RoleCaller, "alice"), "result", "kept-1")...); code != 0 || strings.TrimSpace(out) != "kept" {
		t.Fatalf("toolctl result as alice: exit %d\n%s%s", code, out, se)
	}
	if out, se, code := toolctl(t, f.url, append(as(auth.RoleCaller, "bob"), "result", "kept-1")...); code == 0 || !strings.Contains(out+se, "ResultNotFoundError") {
		t.Fatalf("toolctl result as bob: exit %d\n%s%s", code, out, se)
	}
	if out, se, code := toolctl(t, f.url, append(as(auth.RoleCaller, "alice"), "tools")...); code != 0 || !strings.Contains(out, "echo") {
		t.Fatalf("toolctl tools as alice: exit %d\n%s%s", code, out, se)
	}
	// Without an identity the caller's key may call nothing.
	if _, se, code := toolctl(t, f.url, "--nkey", filepath.Join(f.auth, auth.SeedFile(auth.RoleCaller, "alice")), "call", "echo", `{"text":"x"}`); code == 0 {
		t.Fatalf("an anonymous call with alice's key succeeded:\n%s", se)
	}

	gw := startProc(t, cleanEnv(t), toolctlBin, append([]string{"--nats", f.url}, append(as(auth.RoleGateway, ""),
		"mcp", "serve", "--listen", "127.0.0.1:0", "--tokens", filepath.Join(f.auth, auth.GatewayTokensFile))...)...)
	line, ok := gw.stderr.wait(func(s string) bool { return strings.Contains(s, "MCP gateway listening") })
	if !ok {
		t.Fatalf("the gateway did not start:\n%s", gw.stderr)
	}
	_, endpoint, _ := strings.Cut(line, "url=")
	tokens, err := auth.ReadTokens(filepath.Join(f.auth, auth.GatewayTokensFile))
	if err != nil {
		t.Fatal(err)
	}
	var bobToken string
	for token, id := range tokens {
		if id == "bob" {
			bobToken = token
		}
	}
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without a token: status %d", resp.StatusCode)
	}
	ctx := secureCtx(t)
	client := sdk.NewClient(&sdk.Implementation{Name: "security-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearerTransport{bobToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "via the gateway"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "via the gateway" {
		t.Fatalf("echo through the gateway: %+v, %v", res, err)
	}
	// The worker saw bob.
	if _, ok := f.stderr.wait(func(s string) bool {
		return strings.Contains(s, `"tool call"`) && strings.Contains(s, `"identity":"bob"`)
	}); !ok {
		t.Errorf("no call of bob's in the worker's log:\n%s", f.stderr)
	}
}

func mustMsgpack(t *testing.T, m wire.Message) []byte {
	t.Helper()
	b, err := wire.Msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSecurityKeptResults: a caller may not write the results bucket: a
// rollup published on any of its keys would purge every identity's kept
// results. Alice's kept result survives mallory's try.
func TestSecurityKeptResults(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "alice-kept", Name: "echo", Input: map[string]any{"text": "alice's"}, KeepResult: true}); r.Err() != nil {
		t.Fatalf("alice's call: %+v", r)
	}
	_, mnc, mv := f.caller(t, "mallory")
	for _, key := range []string{"mallory.x", "mallory.=sync"} {
		m := nats.NewMsg("$KV." + wire.BucketResults + "." + key)
		m.Header.Set("Nats-Rollup", "all")
		if err := mnc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		mv.wait(t, "mallory's rollup on "+key, m.Subject)
	}
	if r := alice.Result(ctx, "alice-kept"); r.Text() != "alice's" {
		t.Fatalf("alice's kept result after mallory's rollups: %s %s", r.Code, r.Text())
	}
}

// TestSecurityOlderRoles: behind a server.conf written before the cancels
// stream (its roles neither record nor read durable calls' cancels), a
// worker still serves durable calls, and a caller's durable call that
// times out ends timeout (exit 1), not as credentials refused: the
// record of its cancel is refused, the cancel itself is not.
func TestSecurityOlderRoles(t *testing.T) {
	dir := t.TempDir()
	setup, err := auth.Init(filepath.Join(dir, "auth"), []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(setup.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	var older []string
	for _, l := range strings.Split(string(conf), "\n") {
		if !strings.Contains(l, wire.SubjectCancelledPrefix) && !strings.Contains(l, wire.StreamCancels) {
			older = append(older, l)
		}
	}
	mustWrite(t, setup.ServerConfig, strings.Join(older, "\n"))
	cfg := filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, "builtins:\n  tools:\n    - name: sleep\n")
	w := startWorker(t, "--config", cfg, "--server-config", setup.ServerConfig,
		"--nkey", filepath.Join(dir, "auth", "worker.nk"), "--instance", "older-w")
	key := []string{"--nkey", filepath.Join(dir, "auth", "caller-alice.nk"), "--identity", "alice"}
	_, se, code := toolctl(t, w.url, append(key, "call", "--durable", "--timeout", "1s", "sleep", `{"seconds":10}`)...)
	if code != 1 || !strings.Contains(se, "code timeout") || strings.Contains(se, "refused this to your credentials") {
		t.Errorf("a durable call timing out: exit %d, want 1 (timeout):\n%s", code, se)
	}
	if _, se, code := toolctl(t, w.url, append(key, "cancel", "c1")...); code != 0 || !strings.Contains(se, "cancel sent") {
		t.Errorf("toolctl cancel: exit %d, want 0:\n%s", code, se)
	}
	if _, se, code := toolctl(t, w.url, "--nkey", key[1], "--identity", "bob", "cancel", "c1"); code != 2 {
		t.Errorf("toolctl cancel as another identity: exit %d, want 2 (refused):\n%s", code, se)
	}
}
