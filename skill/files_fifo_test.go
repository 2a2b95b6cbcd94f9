package skill

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/ostest"
)

// A skill's directory that is a FIFO (a skill given in Go naming one, or
// a skills directory swapped for one after the load) is refused, not
// opened for reading: that open waits for a writer, forever, and a
// worker answers its skill requests one at a time.
func TestSkillFilesDirectoryIsAFIFO(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "skills")
	writeSkill(t, filepath.Join(root, "pdf"), skillDoc("pdf", "d", "pdf"))
	skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true}).Load()
	if len(skills) != 1 || len(warns) != 0 {
		t.Fatalf("skills %v, warnings %v", names(skills), warns)
	}
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	if err := ostest.Mkfifo(t, root, 0o644); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(parent, "given")
	if err := ostest.Mkfifo(t, given, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Skill{skills[0], {Name: "given", Dir: given}} {
		done := make(chan error, 2)
		go func() {
			_, _, err := s.Files()
			done <- err
			_, err = s.ReadFile("ref.txt")
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err == nil || strings.Contains(err.Error(), "outside") {
					t.Errorf("%s: %v, want it refused", s.Name, err)
				}
			case <-time.After(30 * time.Second):
				// Release the open that waits, so the test ends.
				for _, p := range []string{root, given} {
					if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
				t.Fatalf("%s: reading the files of a skill whose directory is a FIFO hangs", s.Name)
			}
		}
	}
}
