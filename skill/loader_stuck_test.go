package skill

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// stuckReads makes every read of a SKILL.md's content block until the
// test ends (a skills directory on a mount that stopped answering); it
// returns the number of reads begun and a channel closed when the first
// one is.
func stuckReads(t *testing.T) (*atomic.Int32, <-chan struct{}) {
	t.Helper()
	var reads atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	old := beforeRead
	beforeRead = func(string) {
		if reads.Add(1) == 1 {
			close(entered)
		}
		<-release
	}
	// Restored once the reads it holds are released (they read it
	// before they signalled).
	t.Cleanup(func() { beforeRead = old })
	t.Cleanup(func() { close(release) })
	return &reads, entered
}

// within runs f and fails the test when it has not returned within a
// minute.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s waits for a read that does not return", what)
	}
}

// A read of the skills directory that does not return holds up no user
// of the loader: Load held its lock through the file reads, so the Skill
// tool and Instructions waited behind one stuck read until their call's
// deadline (for good without one). They have the skills last loaded
// meanwhile, with a warning naming the directory, and the loads made
// meanwhile share the one read under way.
func TestLoaderDoesNotWaitForAStuckRead(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, skillDoc("pdf", "d", "# PDF"))
	log, _ := newLogger(t)
	set, err := NewSet(&Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	l, err := set.AddDir("", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	if err := Install(tk, set); err != nil {
		t.Fatal(err)
	}
	if skills, warns := l.Load(); len(skills) != 1 || len(warns) != 0 {
		t.Fatalf("skills %v, warnings %v", names(skills), warns)
	}
	reads, entered := stuckReads(t)
	writeSkill(t, dir, skillDoc("pdf", "d", "# PDF, edited")) // read again
	go l.Load()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the edited SKILL.md is not read again")
	}

	within(t, "Load", func() {
		skills, warns := l.Load()
		if len(skills) != 1 || skills[0].Markdown != "# PDF" {
			t.Errorf("skills %v while the read is stuck, want the last loaded", skills)
		}
		if len(warns) != 1 || warns[0].Path != l.Dir() || !strings.Contains(warns[0].Reason, "does not answer") {
			t.Errorf("warnings %v, want one saying the directory does not answer", warns)
		}
	})
	within(t, "Instructions", func() {
		got, err := Instructions(context.Background(), tk, set, "s1", 0)
		if err != nil || !strings.Contains(got, "<name>pdf</name>") {
			t.Errorf("Instructions: %q, %v", got, err)
		}
	})
	within(t, "the Skill tool", func() {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c1", Name: ViewerName, Session: "s1", Input: map[string]any{"skill": "pdf"}})
		if got := r.Text(); got != "# PDF" {
			t.Errorf("Skill: %q (%v), want the last loaded body", got, r.State)
		}
	})
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads begun, want the one under way shared", n)
	}
}

// A loader whose very first read does not return answers no skills and
// a warning naming the directory, rather than nothing at all, ever; the
// log says so again (every lateEvery) while the read goes on, naming the
// directory and how long.
func TestLoaderFirstReadStuck(t *testing.T) {
	defer func(d, f time.Duration) { lateEvery, firstLoadWait = d, f }(lateEvery, firstLoadWait)
	lateEvery = 0 // every late load logs
	firstLoadWait = loadWait
	dir := t.TempDir()
	writeSkill(t, dir, skillDoc("pdf", "d", "# PDF"))
	log, buf := newLogger(t)
	l := NewLoader(dir, &LoaderOptions{Logger: log})
	_, entered := stuckReads(t)
	for range 2 {
		within(t, "Load", func() {
			skills, warns := l.Load()
			if len(skills) != 0 || len(warns) != 1 || warns[0].Path != l.Dir() {
				t.Errorf("skills %v, warnings %v, want none and one naming the directory", names(skills), warns)
			}
		})
	}
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the SKILL.md is not read")
	}
	if n := strings.Count(buf.String(), "does not answer"); n != 2 || strings.Count(buf.String(), "dir="+l.Dir()+" stuck_for=") != 2 {
		t.Errorf("log %q, want two warnings naming the directory and how long", buf.String())
	}
}

// A loader's first read that is slow (a large directory on a slow disk,
// a loaded machine) but ends is waited for past LoadWait: with nothing
// read before to fall back on, a load answered no skills, and a worker
// starting announced none.
func TestLoaderFirstReadSlow(t *testing.T) {
	defer func(w time.Duration, h func(string)) { loadWait, beforeRead = w, h }(loadWait, beforeRead)
	loadWait = 50 * time.Millisecond
	dir := t.TempDir()
	writeSkill(t, dir, skillDoc("pdf", "d", "# PDF"))
	l := NewLoader(dir, nil)
	beforeRead = func(string) { time.Sleep(10 * loadWait) }
	skills, warns := l.Load()
	if len(skills) != 1 || len(warns) != 0 {
		t.Fatalf("skills %v, warnings %v: the first read, slow, was not waited for", names(skills), warns)
	}
}

// A Set's loaders are read together, not one after another's wait: on
// a mount that does not answer from the start, each loader's first load
// waits FirstLoadWait, and a set of N loaders waited N times that on
// every listing of its skills (the second loader's read began only once
// the first's wait was over).
func TestSetStartsItsLoadersTogether(t *testing.T) {
	defer func(f time.Duration) { firstLoadWait = f }(firstLoadWait)
	firstLoadWait = loadWait
	reads, _ := stuckReads(t)
	var atFirstWarning atomic.Int32
	log := slog.New(onWarn(func() { atFirstWarning.CompareAndSwap(0, reads.Load()) }))
	set, err := NewSet(&Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		dir := t.TempDir()
		writeSkill(t, dir, skillDoc(fmt.Sprint("s", i), "d", "# S"))
		if _, err := set.AddDir(fmt.Sprint("g", i), dir, &LoaderOptions{Logger: log}); err != nil {
			t.Fatal(err)
		}
	}
	within(t, "Warnings", func() { set.Warnings() })
	if n := atFirstWarning.Load(); n != 3 {
		t.Errorf("%d of the 3 loaders' reads begun when the first was found late, want all", n)
	}
}

// onWarn is a slog handler calling f for each warning.
type onWarn func()

func (h onWarn) Enabled(context.Context, slog.Level) bool { return true }
func (h onWarn) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h()
	}
	return nil
}
func (h onWarn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onWarn) WithGroup(string) slog.Handler      { return h }
