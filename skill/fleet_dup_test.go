package skill_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
)

// The fleet's prompt of every group (active nil) lists a name once, as
// the worker's own does (AgentScope's groups=None): two folders declaring
// one name listed it twice, the earlier one too.
func TestFleetInstructionsAllGroupsOnceAName(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	tk, set := skillWorker(t, root)
	writeSkill(t, filepath.Join(root, "basic", "pdf2"), "pdf", "Fill PDF forms, the later folder.", "# PDF 2")
	writeSkill(t, filepath.Join(root, "web", "pdf"), "pdf", "Fill PDF forms, from the web group.", "# PDF web")
	f := fleet(t, natstest.Conn(t, s))
	announce(t, natstest.Conn(t, s), tk, "w1", time.Hour, set)
	natstest.WaitFor(t, "the skills", func() bool { return len(skill.FleetSkills(f, nil)) == 4 })
	want := set.Instructions(nil)
	if n := strings.Count(want, "<name>pdf</name>"); n != 1 {
		t.Fatalf("the worker lists pdf %d times:\n%s", n, want)
	}
	for _, active := range [][]string{nil, {"web"}, {}} {
		if got, want := skill.FleetInstructions(f, active), set.Instructions(active); got != want {
			t.Errorf("active %#v: the fleet renders\n%s\nthe worker renders\n%s", active, got, want)
		}
	}
}
