//go:build linux

package builtin

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestEditRemovesStaleTempFiles: an edit writes its new content to a
// temporary file beside the file, and a worker killed before putting it
// in place (out of memory, a deploy) left that file in the user's
// directory for good, shown by ls -a and git status. A later edit in the
// directory removes the temporary files of killed edits: named as the
// tools name them, regular files, not locked (an edit holds a lock on
// its own while it lasts) and unchanged for staleTempAge. Another
// edit's temporary file, in use, stays, and so does every other file,
// one only like them included.
func TestEditRemovesStaleTempFiles(t *testing.T) {
	ws, err := openWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := ws.real
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("f.txt", "a\n")
	killed := ".toolbus-" + rand.Text() + ".tmp" // what a killed edit left
	write(killed, "half of the new con")
	young := ".toolbus-" + rand.Text() + ".tmp"
	keep := []string{
		".toolbus-notes.tmp",                    // the user's
		".toolbus-" + rand.Text() + ".tmp.orig", // the user's
		".toolbus-" + rand.Text()[:25] + "a.tmp",
	}
	for _, name := range keep {
		write(name, "mine\n")
	}
	linked := ".toolbus-" + rand.Text() + ".tmp" // a symbolic link named as ours
	if err := os.Symlink("f.txt", filepath.Join(dir, linked)); err != nil {
		t.Fatal(err)
	}
	asDir := ".toolbus-" + rand.Text() + ".tmp"
	if err := os.Mkdir(filepath.Join(dir, asDir), 0o755); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, linked, asDir)

	root, err := ws.current()
	if err != nil {
		t.Fatal(err)
	}
	// An edit in progress, of another worker of a shared workspace.
	busy, hold, err := writeTemp(root, "f.txt", "b\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if !isTempName(filepath.Base(busy)) || !isTempName(killed) {
		t.Fatalf("%q and %q are not named as the tools' temporary files", busy, killed)
	}

	f := &files{ws: ws, maxFile: DefaultMaxFileBytes, maxOutput: DefaultMaxOutputBytes}
	edit := func() {
		t.Helper()
		if _, err := f.insert(context.Background(), insertInput{FilePath: "f.txt", Content: "x", LineNumber: 1}); err != nil {
			t.Fatal(err)
		}
	}
	have := func(name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}

	// Younger than staleTempAge: it may be an edit's that took no lock
	// (on a file system without locks), and stays.
	edit()
	if !have(killed) {
		t.Fatalf("%s, made just now, was removed", killed)
	}

	defer func(d time.Duration) { staleTempAge = d }(staleTempAge)
	staleTempAge = 0
	write(young, "x") // made after the last look at the directory
	edit()
	for _, name := range []string{killed, young} {
		if have(name) {
			t.Errorf("%s, a killed edit's temporary file, is still there", name)
		}
	}
	if !have(filepath.Base(busy)) {
		t.Errorf("%s, the temporary file of an edit in progress, was removed", busy)
	}
	for _, name := range keep {
		if !have(name) {
			t.Errorf("%s, not a temporary file of the tools, was removed", name)
		}
	}

	hold.Close() // the edit was killed
	edit()
	if have(filepath.Base(busy)) {
		t.Errorf("%s is still there once no edit holds it", busy)
	}
	want := append([]string{"f.txt"}, keep...)
	slices.Sort(want)
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("the directory holds %q, want %q", got, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != "x\nx\nx\na\n" {
		t.Errorf("f.txt is %q", got)
	}
}
