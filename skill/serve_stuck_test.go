package skill_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
)

// stuckSet serves two skills; the look-up for the first request does
// not end until released (a skill on a mount that stopped answering).
type stuckSet struct {
	first            chan struct{} // holds one token: the first request's
	entered, release chan struct{}
}

func (s stuckSet) InGroup(string) []skill.Skill {
	select {
	case <-s.first:
		close(s.entered)
		<-s.release
	default:
	}
	return []skill.Skill{{Name: "stuck", Description: "d", Markdown: "stuck"}, {Name: "pdf", Description: "d", Markdown: "# PDF"}}
}

// One request whose answer does not come (its read hangs) does not stop
// a worker answering its other skill requests: they were answered one
// at a time, so every skill of the worker, for every worker's Skill
// tool and the gateway, waited behind it.
func TestServeAnswersPastAStuckRequest(t *testing.T) {
	s := natstest.Server(t)
	set := stuckSet{first: make(chan struct{}, 1), entered: make(chan struct{}), release: make(chan struct{})}
	set.first <- struct{}{}
	sub, err := skill.Serve(natstest.Conn(t, s), "w1", set, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	t.Cleanup(func() { close(set.release) })
	nc := natstest.Conn(t, s)
	ctx := natstest.Ctx(t)
	go skill.Fetch(ctx, nc, []string{"w1"}, "stuck", "basic")
	<-set.entered
	body, err := skill.Fetch(ctx, nc, []string{"w1"}, "pdf", "basic")
	if err != nil || body != "# PDF" {
		t.Fatalf("Fetch(pdf) while another request is stuck: %q, %v", body, err)
	}
}

// blockedSet answers nothing until released: every look-up holds its
// serving turn, and says so on entered.
type blockedSet struct {
	entered chan struct{}
	release chan struct{}
}

func (s blockedSet) InGroup(string) []skill.Skill {
	s.entered <- struct{}{}
	<-s.release
	return nil
}

// With every serving turn held by a request that does not end, the next
// request is refused at once as busy (the fetcher asks the next
// instance), and the subscription drains: Serve's callback waited for a
// turn, holding the subscription's delivery for good, so it answered
// nothing more and neither its drain nor its worker's stop ended.
func TestServeBusyWhenEveryTurnIsStuck(t *testing.T) {
	s := natstest.Server(t)
	set := blockedSet{entered: make(chan struct{}, skill.MaxServing), release: make(chan struct{})}
	sub, err := skill.Serve(natstest.Conn(t, s), "w1", set, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(set.release) })
	nc := natstest.Conn(t, s)
	req, err := wire.Msgpack.Marshal(&wire.SkillRequest{Name: "pdf", Group: "basic"})
	if err != nil {
		t.Fatal(err)
	}
	for range skill.MaxServing {
		if err := nc.PublishRequest(wire.SkillSubject("w1"), nc.NewRespInbox(), req); err != nil {
			t.Fatal(err)
		}
	}
	for i := range skill.MaxServing {
		select {
		case <-set.entered:
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d requests being answered", i, skill.MaxServing)
		}
	}
	m, err := nc.Request(wire.SkillSubject("w1"), req, time.Minute)
	if err != nil {
		t.Fatalf("a request while every turn is held: %v, want a busy answer", err)
	}
	var reply wire.SkillReply
	if err := wire.Msgpack.Unmarshal(m.Data, &reply); err != nil || !strings.Contains(reply.Error, "busy") {
		t.Fatalf("reply %+v (%v), want busy", reply, err)
	}
	if err := sub.Drain(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for sub.IsValid() {
		if time.Now().After(deadline) {
			t.Fatal("the subscription does not drain while every turn is held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
