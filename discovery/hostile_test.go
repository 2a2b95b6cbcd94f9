package discovery

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

func publishAnnouncement(t *testing.T, nc *nats.Conn, ann wire.Announcement) {
	t.Helper()
	data, err := wire.JSON.Marshal(&ann)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.AnnounceSubject(ann.Instance), Header: wire.JSON.Header(), Data: data}); err != nil {
		t.Fatal(err)
	}
}

func listed(f *Fleet, id string) bool {
	return slices.ContainsFunc(f.Instances(), func(in Instance) bool { return in.ID == id })
}

// TestForgedRunHidesLittle: one message from a neighbour (any worker may
// publish tools.announce.>) naming a real worker's instance id, of
// another run with an epoch_ms from the far future and a huge
// interval_ms, hides the worker for at most the worker's own TTL (once
// it hid the real worker from every fleet for decades: the real
// announcements were "older" for good). Fleets order two runs by when
// their messages arrive, not by their epochs.
func TestForgedRunHidesLittle(t *testing.T) {
	for _, goodbye := range []bool{true, false} {
		t.Run(fmt.Sprintf("goodbye=%v", goodbye), func(t *testing.T) {
			s := natstest.Server(t)
			startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: 50 * time.Millisecond})
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })

			hostile := natstest.Conn(t, s)
			publishAnnouncement(t, hostile, wire.Announcement{Format: 1, Instance: "w1",
				EpochMS: time.Now().Add(100 * 365 * 24 * time.Hour).UnixMilli(), Seq: 1,
				IntervalMS: 1_000_000_000_000, Goodbye: goodbye})
			hostile.Flush()

			// The real w1 keeps announcing every 50 ms; by the contract it is
			// listed with its tools again within one interval of a message.
			// Waited for rather than looked at once: w1's TTL is 150 ms, and a
			// busy machine can hold the fleet's reader that long.
			time.Sleep(time.Second)
			natstest.WaitFor(t, "the live worker w1 listed with its tools after one forged message", func() bool {
				return listed(f, "w1") && slices.Contains(toolNames(f), "echo")
			})
		})
	}
}

// TestGoodbyeMarksBounded: goodbyes for instances the fleet never saw,
// asking for an endless TTL, are remembered at most maxGoodbyes of them
// and for at most three MaxIntervals (every one was kept, for the TTL the
// goodbye asked, and every later message scanned them all).
func TestGoodbyeMarksBounded(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hostile := natstest.Conn(t, s)
	const n = 5000
	for i := range n {
		publishAnnouncement(t, hostile, wire.Announcement{Format: 1, Instance: fmt.Sprintf("ghost-%d", i),
			EpochMS: 1, Seq: 1, IntervalMS: 1_000_000_000_000, Goodbye: true})
	}
	// "last" announces as a worker does, again and again: with the flood
	// still waiting for the intake, its first messages can find the held
	// subjects at their bound (maxHeld) and be dropped.
	var seq uint64
	var sent time.Time
	natstest.WaitFor(t, "the goodbyes processed", func() bool {
		if time.Since(sent) >= 100*time.Millisecond {
			seq++
			publishAnnouncement(t, hostile, wire.Announcement{Format: 1, Instance: "last", EpochMS: 1, Seq: seq, IntervalMS: 1000})
			sent = time.Now()
		}
		return listed(f, "last")
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.retired) > maxGoodbyes {
		t.Errorf("goodbye marks of %d instances never seen", len(f.retired))
	}
	for id, rs := range f.retired {
		for _, r := range rs {
			if time.Until(r.until) > DefaultTTLFactor*MaxInterval {
				t.Fatalf("the goodbye mark of %s is kept until %v", id, r.until)
			}
		}
	}
}

// TestFloodSparesLiveWorker: a neighbour re-publishing a large (legal)
// announcement as fast as it can does not make a live worker expire: the
// fleet keeps the last few messages per subject and decodes off the
// subscription (it decoded each in full on the subscription, which fell
// behind, hit its pending limit and dropped the real worker's
// announcements with the flood).
func TestFloodSparesLiveWorker(t *testing.T) {
	s := natstest.Server(t)
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1"}) // every 2 s, TTL 6 s
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })

	big := wire.Announcement{Format: 1, Instance: "noisy", EpochMS: time.Now().UnixMilli(), IntervalMS: 2000}
	props := map[string]any{}
	for i := range 40 {
		props[fmt.Sprintf("p%02d", i)] = map[string]any{"type": "string", "description": "a parameter of a tool with a long description"}
	}
	for i := range 300 {
		big.Tools = append(big.Tools, wire.AnnouncedTool{Name: fmt.Sprintf("t%04d", i), Description: "x", Group: "basic", Idempotency: "unknown",
			Parameters: map[string]any{"type": "object", "properties": props}})
	}
	hostile := natstest.Conn(t, s)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seq := uint64(1); ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			big.Seq = seq
			b, _ := wire.Msgpack.Marshal(&big)
			if hostile.Publish(wire.AnnounceSubject("noisy"), b) != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !listed(f, "w1") {
			dropped, _ := f.sub.Dropped()
			t.Fatalf("the live worker w1 vanished from the fleet during a neighbour's flood (the subscription dropped %d messages)", dropped)
		}
	}
}

// TestHeldBounded: what waits for the intake stays within maxHeldBytes and
// heldPerSubject per subject, however many large messages arrive.
func TestHeldBounded(t *testing.T) {
	f := &Fleet{latest: map[string][]heldMsg{}, arrived: make(chan struct{}, 1), waiting: map[string]time.Time{}}
	data := make([]byte, 1<<20)
	copy(data, []byte{0x81, 0xa1, 'v'}) // a map whose first key is an announcement's
	for i := range 200 {
		f.hold(&nats.Msg{Subject: fmt.Sprintf("tools.announce.n%d", i%100), Data: data})
	}
	total := 0
	for subject, q := range f.latest {
		if len(q) > heldPerSubject {
			t.Errorf("%s holds %d messages", subject, len(q))
		}
		total += heldSize(q)
	}
	if total != f.held || total > maxHeldBytes {
		t.Fatalf("held %d bytes (counted %d), bound %d", total, f.held, maxHeldBytes)
	}
}

// TestDiscoverFloodBounded: any caller may send discover requests, and
// each one made every worker build and send its whole announcement. A
// flood of them is answered at most answersPerWindow times a window; the
// requests beyond are answered by announcements on the worker's subject,
// at most one per owedEvery, so a fleet started during the flood still
// finds the worker.
func TestDiscoverFloodBounded(t *testing.T) {
	s := natstest.Server(t)
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	hostile := natstest.Conn(t, s)
	inbox := nats.NewInbox()
	answers, err := hostile.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	answers.SetPendingLimits(-1, -1)
	watcher := natstest.Conn(t, s)
	announced, err := watcher.SubscribeSync(wire.AnnounceSubject("w1"))
	if err != nil {
		t.Fatal(err)
	}
	watcher.Flush()
	const n = 20_000
	start := time.Now()
	for range n {
		if err := hostile.PublishRequest(wire.SubjectDiscover, inbox, nil); err != nil {
			t.Fatal(err)
		}
	}
	hostile.Flush()
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	natstest.WaitFor(t, "w1 listed by a fleet started during the flood", func() bool { return listed(f, "w1") })
	time.Sleep(2 * answerWindow) // the owed announcement
	took := time.Since(start)
	got, _, _ := answers.Pending()
	bcast, _, _ := announced.Pending()
	windows := int(took/answerWindow) + 2
	t.Logf("%d discover requests in %v: %d answered, %d announcements", n, took.Round(time.Millisecond), got, bcast)
	if got > windows*answersPerWindow {
		t.Errorf("%d of %d discover requests answered in %v, want at most %d per %v", got, n, took.Round(time.Millisecond), answersPerWindow, answerWindow)
	}
	if most := int(took/owedEvery) + 2; bcast < 1 || bcast > most {
		t.Errorf("%d announcements for the requests over the bound, want 1 to %d", bcast, most)
	}
}

// markAnnouncement publishes an announcement of instance id offering one
// tool named mark; once the fleet lists mark, every message published
// before it on the same connection has been applied.
func markAnnouncement(t *testing.T, f *Fleet, nc *nats.Conn, id string, seq uint64, mark string) {
	t.Helper()
	publishAnnouncement(t, nc, wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: seq, IntervalMS: 3_600_000,
		Tools: []wire.AnnouncedTool{{Name: mark, Description: "x", Group: "basic", Idempotency: "unknown", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}})
	natstest.WaitFor(t, mark+" applied", func() bool { _, ok := f.Tool(mark); return ok })
}

// TestInstancesBounded: a neighbour (any worker may publish
// tools.announce.>) announcing ever new instance ids with an hour's
// interval made the fleet keep every one for three hours, each with its
// catalog and a timer, and merge them all on every change. The fleet
// keeps at most maxInstances; announcements of new instances past that
// are ignored, and the instances it knows stay listed.
func TestInstancesBounded(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hostile := natstest.Conn(t, s)
	markAnnouncement(t, f, hostile, "live", 1, "mark0")
	const chunk = 1000
	n := (2*maxInstances/chunk + 1) * chunk
	for i := 0; i < n; i += chunk {
		for j := range chunk {
			publishAnnouncement(t, hostile, wire.Announcement{Format: 1, Instance: fmt.Sprintf("ghost-%d", i+j), EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
				Tools: []wire.AnnouncedTool{{Name: "echo", Description: "x", Group: "basic", Idempotency: "unknown", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}})
		}
		markAnnouncement(t, f, hostile, "live", uint64(2+i/chunk), fmt.Sprintf("mark%d", 1+i/chunk))
	}
	f.mu.Lock()
	got := len(f.instances)
	f.mu.Unlock()
	t.Logf("%d forged instances announced: the fleet keeps %d", n, got)
	if got > maxInstances {
		t.Errorf("the fleet keeps %d instances after %d forged ones, want at most %d", got, n, maxInstances)
	}
	if !listed(f, "live") {
		t.Error("the instance known before the flood is no longer listed")
	}
}

// TestInstanceBytesBounded: a few instances announcing large (legal)
// catalogs are kept up to maxInstanceBytes of announcements in all; an
// announcement that would take the fleet past it is ignored.
func TestInstanceBytesBounded(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hostile := natstest.Conn(t, s)
	desc := strings.Repeat("x", 900<<10)
	n := maxInstanceBytes/(900<<10) + 20
	for i := range n {
		b, err := wire.Msgpack.Marshal(&wire.Announcement{Format: 1, Instance: fmt.Sprintf("big-%d", i), EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
			Tools: []wire.AnnouncedTool{{Name: "echo", Description: desc, Group: "basic", Idempotency: "unknown", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := hostile.Publish(wire.AnnounceSubject(fmt.Sprintf("big-%d", i)), b); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			markAnnouncement(t, f, hostile, "small", uint64(i), fmt.Sprintf("mark%d", i))
		}
	}
	markAnnouncement(t, f, hostile, "small", uint64(n+10), "last")
	f.mu.Lock()
	got, bytes := len(f.instances), 0
	for _, in := range f.instances {
		bytes += in.size
	}
	f.mu.Unlock()
	t.Logf("%d announcements of 900 KiB: the fleet keeps %d instances, %d bytes", n, got, bytes)
	if bytes > maxInstanceBytes || got > maxInstanceBytes/(900<<10)+1 {
		t.Errorf("the fleet keeps %d instances of %d bytes in all, want at most %d bytes", got, bytes, maxInstanceBytes)
	}
}

// TestDuplicateNamesInOneAnnouncement: an announcement listing a tool
// (or a group) twice made its instance count twice among the tool's
// instances (toolctl tools said WORKERS 2 for one worker) and listed the
// names twice in the instance. A name repeated within one announcement
// is left out after its first occurrence.
func TestDuplicateNamesInOneAnnouncement(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	p := map[string]any{"type": "object", "properties": map[string]any{}}
	publishAnnouncement(t, natstest.Conn(t, s), wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Groups: []wire.AnnouncedGroup{{Name: "g", Description: "first"}, {Name: "g", Description: "second"}},
		Tools: []wire.AnnouncedTool{
			{Name: "echo", Description: "first", Group: "basic", Idempotency: "unknown", Parameters: p},
			{Name: "echo", Description: "second", Group: "g", Idempotency: "unknown", Parameters: p},
			{Name: "Echo", Description: "another tool", Group: "g", Idempotency: "unknown", Parameters: p},
		}})
	natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })
	echo, ok := f.Tool("echo")
	if !ok || echo.Description != "first" || !slices.Equal(echo.Instances, []string{"w1"}) {
		t.Errorf("echo = %+v (found %v), want the first one, served by w1 once", echo, ok)
	}
	if got := toolNames(f); !slices.Equal(got, []string{"echo", "Echo"}) {
		t.Errorf("tools %v, want [echo Echo]", got)
	}
	in := f.Instances()[0]
	if !slices.Equal(in.Tools, []string{"echo", "Echo"}) || !slices.Equal(in.Groups, []string{"g"}) {
		t.Errorf("instance w1 lists tools %v and groups %v, want [echo Echo] and [g]", in.Tools, in.Groups)
	}
	if g := f.Groups(); len(g) != 1 || g[0].Description != "first" {
		t.Errorf("groups %+v, want the first g", g)
	}
}

// TestListedWithBounded: listed_with was taken as announced, so a tool's
// list could name anything, any number of times, and a fleet merged the
// lists of the instances serving the tool with a slices.Contains per name
// (quadratic) under its lock on every rebuild. Two announcements of 400
// KB, each listing a conditional tool with 60,000 made-up names, held the
// fleet's lock about 20 s per rebuild: a third instance took 24 s to be
// listed, and live workers' announcements waited behind it for longer
// than their TTL. listed_with keeps the names that are basic or groups
// of the announcement, once each, and the merge is linear.
func TestListedWithBounded(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 8 << 20 })
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hostile := natstest.Conn(t, s)
	p := map[string]any{"type": "object", "properties": map[string]any{}}

	publishAnnouncement(t, hostile, wire.Announcement{Format: 1, Instance: "a", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Groups: []wire.AnnouncedGroup{{Name: "web", Description: "Web."}},
		Tools: []wire.AnnouncedTool{{Name: "viewer", Description: "x", Group: "basic", Idempotency: "unknown", Parameters: p,
			Conditional: true, ListedWith: []string{"web", "nope", "web", "basic", "no such group"}}}})
	natstest.WaitFor(t, "a listed", func() bool { return listed(f, "a") })
	if v, _ := f.Tool("viewer"); !slices.Equal(v.ListedWith, []string{"web", "basic"}) {
		t.Errorf("viewer listed with %q, want [web basic]: the groups of the announcement, once each", v.ListedWith)
	}

	// Many groups, each named in listed_with: the union of two instances'
	// lists is made in one pass.
	const n = 100_000
	for _, id := range []string{"b", "c"} {
		ann := wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 1, IntervalMS: 3_600_000}
		tool := wire.AnnouncedTool{Name: "viewer", Description: "x", Group: "basic", Idempotency: "unknown", Parameters: p, Conditional: true}
		for i := range n {
			g := fmt.Sprintf("%s%d", id, i)
			ann.Groups = append(ann.Groups, wire.AnnouncedGroup{Name: g, Description: "d"})
			tool.ListedWith = append(tool.ListedWith, g)
		}
		ann.Tools = []wire.AnnouncedTool{tool}
		b, err := wire.Msgpack.Marshal(&ann)
		if err != nil {
			t.Fatal(err)
		}
		if err := hostile.Publish(wire.AnnounceSubject(id), b); err != nil {
			t.Fatal(err)
		}
	}
	publishAnnouncement(t, hostile, wire.Announcement{Format: 1, Instance: "d", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000})
	natstest.WaitFor(t, "d listed after b's and c's announcements", func() bool { return listed(f, "d") })
	v, _ := f.Tool("viewer")
	if c := f.Catalog(); len(c.Tools) != 1 || len(c.Tools[0].ListedWith) != 2+2*n || !slices.Equal(v.Instances, []string{"a", "b", "c"}) {
		t.Errorf("viewer listed with %d groups by %v, want %d by [a b c]", len(c.Tools[0].ListedWith), v.Instances, 2+2*n)
	}
}

// TestToolLookupIndexed: Fleet.Tool walked the merged tools for every
// lookup, and permission.ListFilter looks up each tool of a listing (once
// per instance announcing a policy, and once more): a listing of a fleet
// of 50,000 tools took 12 s per pass, so every MCP session's refresh, on
// every fleet change, stalled the gateway. Tool finds the tool by name.
func TestToolLookupIndexed(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 8 << 20 })
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hostile := natstest.Conn(t, s)
	p := map[string]any{"type": "object", "properties": map[string]any{}}
	const n = 50_000
	for _, id := range []string{"a", "b"} {
		ann := wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 1, IntervalMS: 3_600_000}
		for i := range n {
			ann.Tools = append(ann.Tools, wire.AnnouncedTool{Name: fmt.Sprintf("%s%d", id, i), Group: "basic", Idempotency: "unknown", Parameters: p})
		}
		b, err := wire.Msgpack.Marshal(&ann)
		if err != nil {
			t.Fatal(err)
		}
		if err := hostile.Publish(wire.AnnounceSubject(id), b); err != nil {
			t.Fatal(err)
		}
	}
	// Reading two announcements of 50,000 tools takes seconds under the
	// race detector and can pass the usual guard on a loaded machine: the
	// wait is not what the test measures, so it is longer.
	for deadline := time.Now().Add(4 * natstest.Guard); !listed(f, "a") || !listed(f, "b"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for a and b listed")
		}
	}
	tools := f.Tools()
	if len(tools) != 2*n {
		t.Fatalf("%d tools, want %d", len(tools), 2*n)
	}
	// Two passes, as a listing filtered by one instance's permissions.
	done := make(chan string, 1)
	go func() {
		for range 2 {
			for _, want := range tools {
				if got, ok := f.Tool(want.Name); !ok || got.Name != want.Name || !slices.Equal(got.Instances, want.Instances) {
					done <- fmt.Sprintf("Tool(%q) = %q %v (found %v)", want.Name, got.Name, got.Instances, ok)
					return
				}
			}
		}
		if _, ok := f.Tool("c0"); ok {
			done <- "Tool(c0) found a tool nobody announces"
			return
		}
		done <- ""
	}()
	select {
	case msg := <-done:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(natstest.Guard):
		t.Fatalf("looking up the %d tools of the fleet twice did not end within %v", len(tools), natstest.Guard)
	}
}
