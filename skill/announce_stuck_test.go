package skill

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// stuckSource loads one skill, and then, once stuck is closed, does not
// return from Load until release is (a skills directory on a mount that
// stopped answering).
type stuckSource struct {
	stuck, release chan struct{}
}

func (s stuckSource) Load() ([]Skill, []Warning) {
	select {
	case <-s.stuck:
		<-s.release
	default:
	}
	return []Skill{{Name: "pdf", Description: "d", Dir: "/skills/pdf"}}, nil
}

// An announcement does not wait for a catalog that does not come: the
// announcer calls Announce's function for every announcement, under its
// lock, so a skills directory that stopped answering stopped the
// worker's announcements (and its goodbye), and the fleet dropped the
// worker with all its tools. The last catalog is announced meanwhile.
func TestAnnounceDoesNotWaitForAStuckDirectory(t *testing.T) {
	src := stuckSource{stuck: make(chan struct{}), release: make(chan struct{})}
	set, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("", src); err != nil {
		t.Fatal(err)
	}
	announce := Announce(set)
	first := announce()
	if a, ok := first.([]Announced); !ok || len(a) != 1 {
		t.Fatalf("first announcement %#v", first)
	}
	close(src.stuck)
	defer close(src.release)
	got := make(chan any, 1)
	go func() { got <- announce() }()
	select {
	case v := <-got:
		if !reflect.DeepEqual(v, first) {
			t.Fatalf("announced %#v while the directory is stuck, want the last catalog %#v", v, first)
		}
	case <-time.After(time.Minute):
		t.Fatal("the announcement waits for a skills directory that does not answer")
	}
}

// The Skill tool's listing (toolkit.ListedWith(set.GroupsWithSkills),
// read for every Catalog: the announcement's, each session's tools/list)
// does not wait for a skills directory that does not answer either: it
// has the groups of the last read meanwhile.
func TestListingDoesNotWaitForAStuckDirectory(t *testing.T) {
	src := stuckSource{stuck: make(chan struct{}), release: make(chan struct{})}
	set, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("", src); err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	if err := Install(tk, set); err != nil {
		t.Fatal(err)
	}
	if got := tk.Schemas(nil); len(got) != 1 || got[0].Function.Name != ViewerName {
		t.Fatalf("schemas %v, want the Skill tool", got)
	}
	close(src.stuck)
	defer close(src.release)
	got := make(chan []toolkit.FunctionSchema, 1)
	go func() { got <- tk.Schemas(nil) }()
	select {
	case s := <-got:
		if len(s) != 1 || s[0].Function.Name != ViewerName {
			t.Fatalf("schemas %v while the directory is stuck, want the Skill tool still", s)
		}
	case <-time.After(time.Minute):
		t.Fatal("listing the toolkit's tools waits for a skills directory that does not answer")
	}
}

// While a read stays stuck, the announcement says so again, at most
// every lateEvery, with how long it has been going: it warned once, and
// then announced the last catalog (none, when the first read hung) for
// good without a word.
func TestAnnounceWarnsWhileStuck(t *testing.T) {
	defer func(d, f time.Duration) { lateEvery, firstLoadWait = d, f }(lateEvery, firstLoadWait)
	lateEvery = 0     // every late announcement warns
	firstLoadWait = 0 // the first read waited for as any
	src := stuckSource{stuck: make(chan struct{}), release: make(chan struct{})}
	close(src.stuck)
	defer close(src.release)
	log, buf := newLogger(t)
	set, err := NewSet(&Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("", src); err != nil {
		t.Fatal(err)
	}
	announce := Announce(set)
	for range 3 {
		if v := announce(); v != nil {
			t.Fatalf("announced %#v while the first read is stuck, want nothing", v)
		}
	}
	if n := strings.Count(buf.String(), "stuck_for="); n != 3 {
		t.Errorf("%d warnings with stuck_for, want 3:\n%s", n, buf.String())
	}
}

// slowSource loads one skill after a while (many skills on a slow disk,
// a loaded machine).
type slowSource time.Duration

func (s slowSource) Load() ([]Skill, []Warning) {
	time.Sleep(time.Duration(s))
	return []Skill{{Name: "pdf", Description: "d", Dir: "/skills/pdf"}}, nil
}

// The first catalog is waited for past AnnounceWait (FirstLoadWait),
// having none before to fall back on: a first read slower than the wait
// announced no skills, and listed the Skill tool with no group, until
// the next announcement (an interval later).
func TestAnnounceWaitsForFirstCatalog(t *testing.T) {
	set, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("", slowSource(AnnounceWait+500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if a, ok := Announce(set)().([]Announced); !ok || len(a) != 1 {
		t.Fatalf("first announcement %#v, want the one skill", a)
	}
	set2, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set2.Add("", slowSource(AnnounceWait+500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if g := set2.GroupsWithSkills(); len(g) != 1 {
		t.Fatalf("groups with skills %q, want the one source's", g)
	}
}
