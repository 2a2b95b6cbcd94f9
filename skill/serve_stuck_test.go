package skill_test

import (
	"testing"

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
