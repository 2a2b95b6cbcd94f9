package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDotDotAfterSymlink: "link/.." is the parent of the link's target for
// the kernel, not the directory holding the link, so a path through a
// symbolic link and ".." is matched and checked where it leads.
func TestDotDotAfterSymlink(t *testing.T) {
	base := t.TempDir()
	wd := filepath.Join(base, "wd")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "sub"), filepath.Join(wd, "l")); err != nil {
		t.Fatal(err)
	}
	// The kernel writes <outside>/authorized_keys.
	p := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	if d := Decide(p, writeFile, file("l/../authorized_keys")); d.Behavior == Allow {
		t.Errorf("accept_edits write l/../authorized_keys (-> %s): allowed (%s)", outside, d.Reason)
	}
	if d := Decide(p, writeFile, file(wd+"/l/../authorized_keys")); d.Behavior == Allow {
		t.Errorf("accept_edits write %s/l/../authorized_keys: allowed (%s)", wd, d.Reason)
	}
	if d := Decide(p, shell, cmd("touch l/../authorized_keys")); d.Behavior == Allow {
		t.Errorf("accept_edits touch l/../authorized_keys: allowed (%s)", d.Reason)
	}
	// The kernel reads <outside>/secret.
	deny := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: ViewFileTool, Pattern: outside + "/**", Behavior: Deny}}}
	if d := Decide(deny, viewFile, file("l/../secret")); d.Behavior != Deny {
		t.Errorf("deny %s/**, read l/../secret: %s (%s)", outside, d.Behavior, d.Reason)
	}
	// Inside the working directory without links, ".." stays lexical.
	if err := os.MkdirAll(filepath.Join(wd, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d := Decide(p, writeFile, file("a/../b.txt")); d.Behavior != Allow {
		t.Errorf("accept_edits write a/../b.txt: %s (%s), want allow", d.Behavior, d.Reason)
	}
}

// TestDanglingSymlink: writing through a link whose target does not exist
// yet creates the target: the path is checked where the link leads.
func TestDanglingSymlink(t *testing.T) {
	base := t.TempDir()
	wd := filepath.Join(base, "wd")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{wd, filepath.Join(outside, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, ".ssh", "authorized_keys"), filepath.Join(wd, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside/new.txt", filepath.Join(wd, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("rel", filepath.Join(wd, "chain")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	for _, f := range []string{"keys", "rel", "chain"} {
		if d := Decide(p, writeFile, file(f)); d.Behavior == Allow {
			t.Errorf("accept_edits write %s (a dangling link out of the working dir): allowed (%s)", f, d.Reason)
		}
		if d := Decide(p, shell, cmd("touch "+f)); d.Behavior == Allow {
			t.Errorf("accept_edits touch %s: allowed (%s)", f, d.Reason)
		}
	}
	if d := Decide(p, writeFile, file("keys")); d.Behavior != Ask || !d.Safety {
		t.Errorf("write keys (-> .ssh/authorized_keys): %s (%s), want a safety ask", d.Behavior, d.Reason)
	}
	deny := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: WriteFileTool, Pattern: outside + "/**", Behavior: Deny}}}
	if d := Decide(deny, writeFile, file("rel")); d.Behavior != Deny {
		t.Errorf("deny %s/**, write rel: %s (%s)", outside, d.Behavior, d.Reason)
	}
	// A link loop leads nowhere: checked as written.
	if err := os.Symlink("loop", filepath.Join(wd, "loop")); err != nil {
		t.Fatal(err)
	}
	Decide(p, writeFile, file("loop"))
}

// TestLongPath: a path longer than PATH_MAX cannot be opened (the kernel
// answers ENAMETOOLONG), so it is matched as written, without resolving
// links; resolving walked it back one component at a time, each walk as
// long as the path: a 32 KB file_path took seconds, a 1 MB one hours.
func TestLongPath(t *testing.T) {
	wd := t.TempDir()
	long := wd + strings.Repeat("/a", 300_000) + "/x"
	if got := realPath(long); got != long {
		t.Errorf("realPath of a %d-byte path changed it", len(long))
	}
	if got := absPath(strings.Repeat("a/../", 100_000)+"x", []string{wd}); got != filepath.Join(wd, "x") {
		t.Errorf("absPath of a long a/../ path: %.80q…", got)
	}
	p := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: WriteFileTool, Pattern: wd + "/a/**", Behavior: Deny}}}
	if d := Decide(p, writeFile, file(long)); d.Behavior != Deny {
		t.Errorf("deny %s/a/**, write a %d-byte path under it: %s (%s)", wd, len(long), d.Behavior, d.Reason)
	}
	if d := Decide(p, shell, cmd("touch "+long)); d.Behavior != Allow {
		t.Errorf("accept_edits, touch a %d-byte path inside the working dir: %s (%s)", len(long), d.Behavior, d.Reason)
	}
}

// TestDotDotWalk: a path with ".." is taken as the kernel walks it, each
// link resolved where it stands (a link to a link, a relative one, one
// reached after a ".."), the components as written kept up to the last
// "..", and a missing directory popped as written.
func TestDotDotWalk(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b/c", "t/u/v", "x"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"l1": "t/u/v", "a/l2": "../l1", "x/l3": base + "/a/b/c"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	for in, want := range map[string]string{
		"l1/../f":              "t/u/f",
		"a/l2/../f":            "t/u/f",
		"x/l3/../../b/c/../f":  "a/b/f",
		"a/../l1/../../f":      "t/f",
		"no/such/../../a/f":    "a/f",
		"a/b/../b/c/l/../../f": "a/b/f",
		"x/l3/k":               "x/l3/k",
		"a/../x/l3/k":          "x/l3/k",
	} {
		if got := absPath(in, []string{base}); got != filepath.Join(base, want) {
			t.Errorf("absPath(%q) = %q, want %q", in, got, filepath.Join(base, want))
		}
	}
}
