package skill

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
)

// TestLoaderHostileSkillFolders: a skills directory holds skills from
// third parties. A SKILL.md that is a socket, a device, a link in a loop,
// a link to a device or to /etc/passwd, or a sparse file of 100 MB is
// refused with a reason naming it, unopened or unread, and the skill
// beside them loads; a skill folder holding such files lists none of
// them, and asking for one is refused with a reason.
func TestLoaderHostileSkillFolders(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good")
	writeSkill(t, good, skillDoc("good", "d", "# Good"))
	at := func(dir string) string {
		p := filepath.Join(root, dir, FileName)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := map[string]string{} // SKILL.md → its warning
	if l, err := ostest.ListenUnix(t, at("sock")); err == nil {
		t.Cleanup(func() { l.Close() }) // which removes the file
		want[at("sock")] = "a socket"
	} else {
		t.Log("no unix socket:", err)
	}
	if err := syscall.Mknod(at("dev"), syscall.S_IFCHR|0o644, 1<<8|5); err == nil { // /dev/zero's numbers
		want[at("dev")] = "a character device"
	} else if !errors.Is(err, syscall.EPERM) {
		t.Fatal(err)
	}
	for dir, target := range map[string]string{"loop": FileName, "zero": "/dev/zero", "passwd": "/etc/passwd"} {
		if err := os.Symlink(target, at(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want[at("loop")] = "too many levels of symbolic links"
	want[at("zero")] = "outside the skill directory"
	want[at("passwd")] = "outside the skill directory"
	f, err := os.Create(at("sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want[at("sparse")] = "104857600 bytes, over the limit"

	skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	if len(skills) != 1 || skills[0].Name != "good" {
		t.Fatalf("skills %v, want good", names(skills))
	}
	got := map[string]string{}
	for _, w := range warns {
		got[w.Path] = w.Reason
	}
	for p, reason := range want {
		if !strings.Contains(got[p], reason) {
			t.Errorf("%s: warning %q, want %q in it", p, got[p], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("warnings %v, want %d", warns, len(want))
	}

	// The same files in the good skill's folder.
	for name, target := range map[string]string{"loop": "loop", "up": "..", "zero": "/dev/zero", "passwd": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(good, name)); err != nil {
			t.Fatal(err)
		}
	}
	odd := []string{"loop", "up", "zero", "passwd"}
	if l, err := ostest.ListenUnix(t, filepath.Join(good, "sock")); err == nil {
		t.Cleanup(func() { l.Close() })
		odd = append(odd, "sock")
	}
	if err := syscall.Mknod(filepath.Join(good, "dev"), syscall.S_IFCHR|0o644, 1<<8|5); err == nil {
		odd = append(odd, "dev")
	}
	if err := os.WriteFile(filepath.Join(good, "notes.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, truncated, err := skills[0].Files()
	if err != nil || truncated || strings.Join(files, ",") != "notes.txt" {
		t.Errorf("Files: %q %v %v, want notes.txt alone", files, truncated, err)
	}
	for _, name := range odd {
		if r, err := skills[0].ReadFile(name); err == nil || !strings.Contains(err.Error(), "link") && !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile(%s) = %+v, %v; want it refused as a link or not a regular file", name, r, err)
		}
	}
}
