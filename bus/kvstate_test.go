package bus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// jetstreamKeyRE is the KV key syntax nats.go enforces.
var jetstreamKeyRE = regexp.MustCompile(`^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`)

// newTestKVState binds a KVState on its own connection to s.
func newTestKVState(t *testing.T, js jetstream.JetStream, opts *KVStateOptions) *KVState {
	t.Helper()
	st, err := NewKVState(natstest.Ctx(t), js, opts)
	if err != nil {
		t.Fatalf("NewKVState: %v", err)
	}
	return st
}

func TestSessionKey(t *testing.T) {
	tests := []struct {
		session string
		key     string // "" means: encoded, only check the round trip
	}{
		{session: "abc", key: "abc"},
		{session: "A-b_9", key: "A-b_9"},
		{session: "", key: "="},
		{session: "a.b", key: "=YS5i"},
		{session: "user@example.com"},
		{session: "with space"},
		{session: "ünïcödé 会话"},
		{session: "*"},
		{session: ">"},
		{session: "=YS5i"}, // looks like an encoded key: must not collide with "a.b"
		{session: "tab\tnew\nline"},
		{session: "\x00\xff"},
		{session: strings.Repeat("x", wire.MaxSessionKeyLen), key: strings.Repeat("x", wire.MaxSessionKeyLen)},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		key, err := wire.SessionKey(tt.session)
		if err != nil {
			t.Fatalf("wire.SessionKey(%q): %v", tt.session, err)
		}
		if tt.key != "" && key != tt.key {
			t.Errorf("wire.SessionKey(%q) = %q, want %q", tt.session, key, tt.key)
		}
		if !jetstreamKeyRE.MatchString(key) {
			t.Errorf("wire.SessionKey(%q) = %q is not a valid KV key", tt.session, key)
		}
		if other, dup := seen[key]; dup {
			t.Errorf("sessions %q and %q share key %q", other, tt.session, key)
		}
		seen[key] = tt.session
		back, err := wire.ParseSessionKey(key)
		if err != nil || back != tt.session {
			t.Errorf("wire.ParseSessionKey(%q) = %q, %v; want %q", key, back, err, tt.session)
		}
	}
}

func TestSessionKeyBadInput(t *testing.T) {
	if _, err := wire.SessionKey(strings.Repeat("x", wire.MaxSessionKeyLen+1)); !errors.Is(err, wire.ErrInvalidSession) {
		t.Errorf("over-long plain session: err = %v, want wire.ErrInvalidSession", err)
	}
	if _, err := wire.SessionKey(strings.Repeat("é", 400)); !errors.Is(err, wire.ErrInvalidSession) {
		t.Errorf("over-long encoded session: err = %v, want wire.ErrInvalidSession", err)
	}
	for _, key := range []string{"=!!", "a.b.c", "", "=YS5i=", "a b", "a.=YS5i="} {
		if s, err := wire.ParseSessionKey(key); !errors.Is(err, wire.ErrInvalidSession) {
			t.Errorf("wire.ParseSessionKey(%q) = %q, %v; want wire.ErrInvalidSession", key, s, err)
		}
	}
}

func TestKVStateStoreLoad(t *testing.T) {
	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil)
	ctx := natstest.Ctx(t)
	if st.Bucket() != wire.BucketGroups {
		t.Errorf("Bucket() = %q, want %q", st.Bucket(), wire.BucketGroups)
	}

	groups, rev, ok, err := st.Load(ctx, "never", 0)
	if err != nil || ok || groups != nil || rev != 0 {
		t.Fatalf("Load(absent) = %v, %d, %v, %v; want nil, 0, false, nil", groups, rev, ok, err)
	}

	tests := []struct {
		session string
		groups  []string
		want    []string
	}{
		{"s1", []string{"web", "files"}, []string{"web", "files"}},
		{"s1", []string{"files"}, []string{"files"}},
		{"s1", nil, []string{}},
		{"s2", []string{}, []string{}},
		{"", []string{"web"}, []string{"web"}},
		{"a.b", []string{"files"}, []string{"files"}},
		{"=YS5i", []string{"web"}, []string{"web"}},
		{"user@example.com/ü 会话", []string{"web", "files"}, []string{"web", "files"}},
		{strings.Repeat("é", 300), []string{"web"}, []string{"web"}},
	}
	var last uint64
	for _, tt := range tests {
		rev, err := st.Store(ctx, tt.session, tt.groups)
		if err != nil {
			t.Fatalf("Store(%q, %v): %v", tt.session, tt.groups, err)
		}
		if rev <= last {
			t.Errorf("Store(%q) revision %d does not increase (previous %d)", tt.session, rev, last)
		}
		last = rev
		for _, min := range []uint64{0, rev} {
			got, grev, ok, err := st.Load(ctx, tt.session, min)
			if err != nil || !ok || grev != rev || !slices.Equal(got, tt.want) || got == nil {
				t.Errorf("Load(%q, %d) = %#v, %d, %v, %v; want %#v, %d, true, nil", tt.session, min, got, grev, ok, err, tt.want, rev)
			}
		}
	}
	// "a.b" and "=YS5i" are different sessions although one's key looks
	// like the other's encoding.
	if got, _, _, _ := st.Load(ctx, "a.b", 0); !slices.Equal(got, []string{"files"}) {
		t.Errorf(`Load("a.b") = %v, want [files]`, got)
	}
}

func TestKVStateBadInput(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	st := newTestKVState(t, js, &KVStateOptions{Bucket: "bad_input"})
	ctx := natstest.Ctx(t)
	long := strings.Repeat("x", wire.MaxSessionKeyLen+1)
	if _, err := st.Store(ctx, long, []string{"web"}); !errors.Is(err, wire.ErrInvalidSession) {
		t.Errorf("Store(over-long session): err = %v, want wire.ErrInvalidSession", err)
	}
	if _, _, _, err := st.Load(ctx, long, 0); !errors.Is(err, wire.ErrInvalidSession) {
		t.Errorf("Load(over-long session): err = %v, want wire.ErrInvalidSession", err)
	}
	if _, err := st.Delete(ctx, long); !errors.Is(err, wire.ErrInvalidSession) {
		t.Errorf("Delete(over-long session): err = %v, want wire.ErrInvalidSession", err)
	}

	// Values written by something else than KVState.
	kv, err := js.KeyValue(ctx, "bad_input")
	if err != nil {
		t.Fatal(err)
	}
	for _, val := range []string{"web,files", `{"web":true}`, "null", `[1,2]`, ""} {
		rev, err := kv.Put(ctx, "garbage", []byte(val))
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, err = st.Load(ctx, "garbage", rev)
		if err == nil || !strings.Contains(err.Error(), "bad value") || !strings.Contains(err.Error(), `"garbage"`) {
			t.Errorf("Load of value %q: err = %v, want a clear 'bad value' error naming the session", val, err)
		}
	}
	// The bad value does not stop a store from replacing it.
	rev, err := st.Store(ctx, "garbage", []string{"web"})
	if err != nil {
		t.Fatalf("Store over a bad value: %v", err)
	}
	if got, grev, ok, err := st.Load(ctx, "garbage", rev); err != nil || !ok || !slices.Equal(got, []string{"web"}) {
		t.Errorf("Load after repair = %v, %d, %v, %v", got, grev, ok, err)
	}
}

func TestNewKVStateBadConfig(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	tests := []struct {
		name string
		js   jetstream.JetStream
		cfg  *KVStateOptions
		want string
	}{
		{"nil JetStream", nil, nil, "nil JetStream"},
		{"bad bucket name", js, &KVStateOptions{Bucket: "a.b"}, "invalid bucket name"},
		{"bucket with space", js, &KVStateOptions{Bucket: "a b"}, "invalid bucket name"},
		{"too many replicas", js, &KVStateOptions{Replicas: 6}, "replicas must be 1 to 5"},
		{"negative replicas", js, &KVStateOptions{Replicas: -1}, "replicas must be 1 to 5"},
		{"negative wait", js, &KVStateOptions{MaxWait: -time.Second}, "negative MaxWait"},
		{"R3 on one node", js, &KVStateOptions{Bucket: "r3", Replicas: 3}, `binding bucket "r3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := NewKVState(natstest.Ctx(t), tt.js, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewKVState = %v, %v; want an error containing %q", st, err, tt.want)
			}
		})
	}
}

func TestKVStateBindsExistingBucket(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	a := newTestKVState(t, js, &KVStateOptions{Storage: jetstream.MemoryStorage})
	rev, err := a.Store(ctx, "s", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	// A different configuration binds the existing bucket as is.
	b := newTestKVState(t, js, &KVStateOptions{Storage: jetstream.FileStorage, TTL: time.Hour})
	if got, _, ok, err := b.Load(ctx, "s", rev); err != nil || !ok || !slices.Equal(got, []string{"web"}) {
		t.Errorf("Load through the second binding = %v, %v, %v", got, ok, err)
	}
}

// Two workers on two connections: what one stores, the other honours at
// once with the revision.
func TestKVStateTwoWorkers(t *testing.T) {
	s := natstest.Server(t)
	a := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil)
	b := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil)
	ctx := natstest.Ctx(t)
	sets := [][]string{{"web"}, {"files"}, {}, {"web", "files"}}
	for i := range 100 {
		w, r := a, b
		if i%2 == 1 {
			w, r = b, a
		}
		want := sets[i%len(sets)]
		rev, err := w.Store(ctx, "sess", want)
		if err != nil {
			t.Fatal(err)
		}
		got, grev, ok, err := r.Load(ctx, "sess", rev)
		if err != nil || !ok || grev < rev || !slices.Equal(got, want) {
			t.Fatalf("round %d: Load = %v, %d, %v, %v; want %v at >= %d", i, got, grev, ok, err, want, rev)
		}
	}
}

func TestKVStateConcurrentStores(t *testing.T) {
	s := natstest.Server(t)
	ctx := natstest.Ctx(t)
	states := []*KVState{
		newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil),
		newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil),
	}
	const n = 20
	revs := make([]uint64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			revs[i], errs[i] = states[i%2].Store(ctx, "shared", []string{fmt.Sprint("g", i)})
		})
	}
	wg.Wait()
	top := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("store %d: %v", i, errs[i])
		}
		if revs[i] > revs[top] {
			top = i
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(revs)))) != n {
		t.Errorf("revisions are not distinct: %v", revs)
	}
	got, rev, ok, err := states[0].Load(ctx, "shared", revs[top])
	if err != nil || !ok || rev != revs[top] || !slices.Equal(got, []string{fmt.Sprint("g", top)}) {
		t.Errorf("Load = %v, %d, %v, %v; want the last write [g%d] at %d", got, rev, ok, err, top, revs[top])
	}
}

// A revision of another key: the leader has reached it, the session's own
// (older) state is current and is returned without waiting.
func TestKVStateRevisionOfAnotherKey(t *testing.T) {
	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), &KVStateOptions{MaxWait: time.Minute})
	ctx := natstest.Ctx(t)
	r1, err := st.Store(ctx, "s1", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := st.Store(ctx, "s2", []string{"files"})
	if err != nil {
		t.Fatal(err)
	}
	got, rev, ok, err := st.Load(ctx, "s1", r2)
	if err != nil || !ok || rev != r1 || !slices.Equal(got, []string{"web"}) {
		t.Errorf("Load(s1, %d) = %v, %d, %v, %v; want [web] at %d", r2, got, rev, ok, err, r1)
	}
	got, rev, ok, err = st.Load(ctx, "never", r2)
	if err != nil || ok || got != nil {
		t.Errorf("Load(never, %d) = %v, %d, %v, %v; want absent", r2, got, rev, ok, err)
	}
}

// A revision the bucket has not reached fails clearly at the deadline.
func TestKVStateFutureRevision(t *testing.T) {
	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), &KVStateOptions{MaxWait: 200 * time.Millisecond})
	ctx := natstest.Ctx(t)
	rev, err := st.Store(ctx, "s", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	// No deadline on ctx: MaxWait bounds the wait.
	_, _, _, err = st.Load(context.Background(), "s", rev+1000)
	if !errors.Is(err, ErrStaleGroupState) || !strings.Contains(err.Error(), fmt.Sprint(rev+1000)) {
		t.Errorf("Load(future) without deadline: err = %v, want ErrStaleGroupState naming the revision", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, _, _, err = st.Load(short, "s", rev+1000)
	if !errors.Is(err, ErrStaleGroupState) {
		t.Errorf("Load(future) with deadline: err = %v, want ErrStaleGroupState", err)
	}
	// Through a toolkit the failure is data: code unavailable.
	tk := newGroupsToolkit(t, st)
	resp := tk.Invoke(short, toolkit.ToolCall{ID: "c", Name: "search", Session: "s", GroupsRevision: rev + 1000})
	if resp.Code != toolkit.CodeUnavailable || !strings.Contains(resp.Text(), "GroupStateError") {
		t.Errorf("call with a future revision = %s %s %q; want unavailable GroupStateError", resp.State, resp.Code, resp.Text())
	}
}

func TestKVStateDelete(t *testing.T) {
	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), nil)
	ctx := natstest.Ctx(t)
	rev, err := st.Store(ctx, "s", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	drev, err := st.Delete(ctx, "s")
	if err != nil || drev <= rev {
		t.Fatalf("Delete = %d, %v; want a revision after %d", drev, err, rev)
	}
	for _, min := range []uint64{0, rev, drev} {
		if got, _, ok, err := st.Load(ctx, "s", min); err != nil || ok {
			t.Errorf("Load(deleted, %d) = %v, %v, %v; want absent", min, got, ok, err)
		}
	}
	// Stored again after a delete.
	rev, err = st.Store(ctx, "s", []string{"files"})
	if err != nil || rev <= drev {
		t.Fatalf("Store after Delete = %d, %v", rev, err)
	}
	if got, _, ok, err := st.Load(ctx, "s", rev); err != nil || !ok || !slices.Equal(got, []string{"files"}) {
		t.Errorf("Load after re-store = %v, %v, %v", got, ok, err)
	}
}

func TestKVStateTTL(t *testing.T) {
	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), &KVStateOptions{Bucket: "ttl", TTL: 500 * time.Millisecond})
	ctx := natstest.Ctx(t)
	rev, err := st.Store(ctx, "s", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	// Expired state reads as absent, also with the revision of the
	// expired write (the leader has passed it).
	for {
		_, _, ok, err := st.Load(ctx, "s", rev)
		if err != nil {
			t.Fatalf("Load while expiring: %v", err)
		}
		if !ok {
			break
		}
		if err := kv.Sleep(ctx, 50*time.Millisecond); err != nil {
			t.Fatal("state never expired")
		}
	}
}

// The write goes to node 1, the read with the revision to node 3, on an R3
// bucket: never stale.
func TestKVStateClusterNoStaleRead(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster")
	}
	servers := natstest.Cluster(t)
	ctx := natstest.Ctx(t)
	js1 := natstest.JS(t, natstest.URLConn(t, servers[0].ClientURL()))
	js3 := natstest.JS(t, natstest.URLConn(t, servers[2].ClientURL()))
	var w *KVState
	for { // the meta leader may still be settling: retry the R3 create
		var err error
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		w, err = NewKVState(cctx, js1, &KVStateOptions{Replicas: 3})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("creating the R3 bucket: %v", err)
		}
		t.Logf("creating the R3 bucket: %v (retrying)", err)
	}
	r := newTestKVState(t, js3, nil)
	stalePlain := 0
	const rounds = 200
	for i := range rounds {
		want := []string{fmt.Sprint("g", i)}
		rev, err := w.Store(ctx, "sess", want)
		if err != nil {
			t.Fatal(err)
		}
		// A plain read shows why the revision is needed.
		if _, prev, _, err := r.Load(ctx, "sess", 0); err == nil && prev < rev {
			stalePlain++
		}
		got, grev, ok, err := r.Load(ctx, "sess", rev)
		if err != nil || !ok || grev < rev || !slices.Equal(got, want) {
			t.Fatalf("round %d: Load on node 3 = %v, %d, %v, %v; want %v at >= %d", i, got, grev, ok, err, want, rev)
		}
	}
	t.Logf("reads without a revision on node 3 that were stale: %d of %d", stalePlain, rounds)

	// A revision of another key is answered by the stream leader, through
	// node 3, without waiting.
	r1, err := w.Store(ctx, "other", []string{"files"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := w.Store(ctx, "sess", []string{"last"})
	if err != nil {
		t.Fatal(err)
	}
	got, rev, ok, err := r.Load(ctx, "other", r2)
	if err != nil || !ok || rev != r1 || !slices.Equal(got, []string{"files"}) {
		t.Errorf("Load(other, %d) on node 3 = %v, %d, %v, %v; want [files] at %d", r2, got, rev, ok, err, r1)
	}
}

// groupsConfig registers the same groups and tools on a toolkit, as every
// worker of a fleet does.
func newGroupsToolkit(t *testing.T, state toolkit.GroupState) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web search.", Instructions: "Cite sources."}); err != nil {
		t.Fatal(err)
	}
	type q struct {
		Query string `json:"query"`
	}
	err := tk.Add(toolkit.Func("search", "Search the web.", func(_ context.Context, in q) (string, error) {
		return "results for " + in.Query, nil
	}), toolkit.InGroup("web"), toolkit.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// reset_tools on toolkit A, then a call to the group's tool on toolkit B
// with the returned revision succeeds; on one node and across a cluster.
func TestKVStateToolkits(t *testing.T) {
	single := func(t *testing.T) (jetstream.JetStream, jetstream.JetStream) {
		s := natstest.Server(t)
		return natstest.JS(t, natstest.Conn(t, s)), natstest.JS(t, natstest.Conn(t, s))
	}
	cluster := func(t *testing.T) (jetstream.JetStream, jetstream.JetStream) {
		servers := natstest.Cluster(t)
		return natstest.JS(t, natstest.URLConn(t, servers[0].ClientURL())), natstest.JS(t, natstest.URLConn(t, servers[2].ClientURL()))
	}
	tests := []struct {
		name     string
		setup    func(t *testing.T) (jetstream.JetStream, jetstream.JetStream)
		replicas int
	}{
		{"single node", single, 1},
		{"cluster", cluster, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.replicas > 1 && testing.Short() {
				t.Skip("3-node cluster")
			}
			jsA, jsB := tt.setup(t)
			ctx := natstest.Ctx(t)
			var stA *KVState
			for {
				var err error
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				stA, err = NewKVState(cctx, jsA, &KVStateOptions{Replicas: tt.replicas})
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("NewKVState: %v", err)
				}
			}
			a := newGroupsToolkit(t, stA)
			b := newGroupsToolkit(t, newTestKVState(t, jsB, nil))
			search := toolkit.ToolCall{ID: "s0", Name: "search", Session: "agent-1", Input: map[string]any{"query": "nats"}}

			if resp := b.Invoke(ctx, search); resp.Code != toolkit.CodeGroupInactive {
				t.Fatalf("before reset_tools: %s %s %q; want group_inactive", resp.State, resp.Code, resp.Text())
			}
			for i, on := range []bool{true, false, true} {
				reset := a.Invoke(ctx, toolkit.ToolCall{ID: fmt.Sprint("r", i), Name: toolkit.MetaToolName, Session: "agent-1", Input: map[string]any{"web": on}})
				if reset.State != toolkit.StateSuccess {
					t.Fatalf("reset_tools: %s %s %q", reset.State, reset.Code, reset.Text())
				}
				rev, _ := reset.Metadata[toolkit.MetaGroupsRevision].(uint64)
				if rev == 0 {
					t.Fatalf("reset_tools metadata has no revision: %v", reset.Metadata)
				}
				call := search
				call.ID = fmt.Sprint("s", i+1)
				call.GroupsRevision = rev
				resp := b.Invoke(ctx, call)
				if on && (resp.State != toolkit.StateSuccess || resp.Text() != "results for nats") {
					t.Fatalf("after activating on A, B answered %s %s %q", resp.State, resp.Code, resp.Text())
				}
				if !on && resp.Code != toolkit.CodeGroupInactive {
					t.Fatalf("after deactivating on A, B answered %s %s %q", resp.State, resp.Code, resp.Text())
				}
				schemas, err := b.SessionSchemas(ctx, "agent-1", rev)
				if err != nil {
					t.Fatal(err)
				}
				listed := slices.ContainsFunc(schemas, func(s toolkit.FunctionSchema) bool { return s.Function.Name == "search" })
				if listed != on {
					t.Errorf("B lists search = %v, want %v", listed, on)
				}
			}
		})
	}
}

// BenchmarkKVState measures one Store and one Load (with and without the
// revision) on a single in-process node, file storage.
func BenchmarkKVState(b *testing.B) {
	s := natstest.Server(b)
	st, err := NewKVState(context.Background(), natstest.JS(b, natstest.Conn(b, s)), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rev, err := st.Store(ctx, "bench", []string{"web"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Store", func(b *testing.B) {
		for b.Loop() {
			if rev, err = st.Store(ctx, "bench", []string{"web", "files"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Load", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := st.Load(ctx, "bench", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("LoadAtRevision", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := st.Load(ctx, "bench", rev); err != nil {
				b.Fatal(err)
			}
		}
	})
	other, err := st.Store(ctx, "other", []string{"web"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("LoadAtOtherKeysRevision", func(b *testing.B) { // the leader path
		for b.Loop() {
			if _, _, _, err := st.Load(ctx, "bench", other); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestGroupActivationAcrossWorkersKV: two workers on different nodes of a
// 3-node cluster, each with its own KVState on its own connection. A
// session activates a group through whichever worker gets reset_tools;
// every later call of that session, on either worker, honours it at once,
// and so does a deactivation. The client sits on a third node.
func TestGroupActivationAcrossWorkersKV(t *testing.T) {
	nodes := natstest.Cluster(t)
	ctx := natstest.Ctx(t)
	served := map[string]int{}
	for i, node := range nodes[:2] {
		nc := natstest.URLConn(t, node.ClientURL())
		state, err := NewKVState(ctx, natstest.JS(t, nc), &KVStateOptions{Replicas: 3, Storage: jetstream.MemoryStorage})
		if err != nil {
			t.Fatal(err)
		}
		tk := toolkit.New(&toolkit.Options{State: state})
		if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
			t.Fatal(err)
		}
		if err := tk.Add(toolkit.Func("secret", "Secret.", func(context.Context, struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault")); err != nil {
			t.Fatal(err)
		}
		serve(t, nc, tk, &WorkerOptions{Instance: fmt.Sprintf("w%d", i)})
	}
	c, err := NewClient(natstest.URLConn(t, nodes[2].ClientURL()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	call := func(id, name string, input map[string]any) *toolkit.Response {
		return c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: name, Session: "sess/1", Input: input})
	}
	if r := call("before", "secret", nil); r.Code != toolkit.CodeGroupInactive {
		t.Fatalf("before activation: %+v", r)
	}
	for round := range 10 {
		if r := call(fmt.Sprintf("on-%d", round), toolkit.MetaToolName, map[string]any{"vault": true}); r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools on: %+v", r)
		}
		for i := range 4 {
			r := call(fmt.Sprintf("use-%d-%d", round, i), "secret", nil)
			if r.State != toolkit.StateSuccess || r.Text() != "s3cret" {
				t.Fatalf("round %d call %d right after activation: %+v", round, i, r)
			}
			served[r.Metadata[wire.MetaWorker].(string)]++
		}
		if r := call(fmt.Sprintf("off-%d", round), toolkit.MetaToolName, map[string]any{}); r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools off: %+v", r)
		}
		for i := range 2 {
			if r := call(fmt.Sprintf("gone-%d-%d", round, i), "secret", nil); r.Code != toolkit.CodeGroupInactive {
				t.Fatalf("round %d call %d right after deactivation: %+v", round, i, r)
			}
		}
	}
	if len(served) != 2 {
		t.Fatalf("calls were served by %v; want both workers", served)
	}
	t.Logf("group calls served: %v", served)
}

// TestKVStateBucketTTL: the bucket a KVState creates keeps a session's state
// DefaultSessionTTL after its last change, or what it is told (negative:
// forever).
func TestKVStateBucketTTL(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	for _, tt := range []struct {
		bucket string
		ttl    time.Duration
		want   time.Duration
	}{{"ttl_default", 0, DefaultSessionTTL}, {"ttl_hour", time.Hour, time.Hour}, {"ttl_forever", -1, 0}} {
		st := newTestKVState(t, js, &KVStateOptions{Bucket: tt.bucket, TTL: tt.ttl})
		status, err := st.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if status.TTL() != tt.want {
			t.Errorf("%s: TTL %v, want %v", tt.bucket, status.TTL(), tt.want)
		}
	}
}

// A revision far past the bucket's last one was never written by it (a
// caller may name any): Load says so at once, naming both revisions,
// instead of polling the stream until the caller's deadline, however
// far that is. Before, it asked for the stream's info every 50 ms until
// then.
func TestKVStateRevisionFarAhead(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	st := newTestKVState(t, natstest.JS(t, nc), &KVStateOptions{MaxWait: time.Minute})
	rev, err := st.Store(natstest.Ctx(t), "s", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	infos := make(chan *nats.Msg, 1<<16)
	if _, err := nc.ChanSubscribe("$JS.API.STREAM.INFO."+st.stream, infos); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const far = uint64(math.MaxUint64)
	_, _, _, err = st.Load(ctx, "s", far)
	if ctx.Err() != nil {
		t.Fatalf("Load(%d) waited until its deadline: %v", far, err)
	}
	if !errors.Is(err, ErrStaleGroupState) || !strings.Contains(err.Error(), fmt.Sprint(far)) || !strings.Contains(err.Error(), fmt.Sprintf("last revision %d", rev)) {
		t.Errorf("Load(%d) = %v; want ErrStaleGroupState naming it and the bucket's last revision %d", far, err, rev)
	}
	if err := nc.Flush(); err != nil { // the requests made are in infos
		t.Fatal(err)
	}
	if n := len(infos); n > 1 {
		t.Errorf("Load(%d) asked for the stream's info %d times, want once", far, n)
	}
}

// A revision just past the bucket's last one may be a moment away on a
// new stream leader: Load waits for it, but at most RevisionWait, however
// far the caller's deadline is, and then names both revisions.
func TestKVStateRevisionWaitBounded(t *testing.T) {
	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), &KVStateOptions{MaxWait: time.Minute})
	rev, err := st.Store(natstest.Ctx(t), "s", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	// Far past RevisionWait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, _, err = st.Load(ctx, "s", rev+1)
	if ctx.Err() != nil {
		t.Fatalf("Load(%d) waited until its deadline: %v", rev+1, err)
	}
	if !errors.Is(err, ErrStaleGroupState) || !strings.Contains(err.Error(), fmt.Sprintf("revision %d not reached", rev+1)) || !strings.Contains(err.Error(), fmt.Sprintf("last revision %d", rev)) {
		t.Errorf("Load(%d) = %v; want ErrStaleGroupState naming it and the bucket's last revision %d", rev+1, err, rev)
	}
}
