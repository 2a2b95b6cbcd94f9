package permission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestReadOnlyExcludesWrites: commands that write files are not read-only
// (which would allow them without asking in every mode, explore included).
func TestReadOnlyExcludesWrites(t *testing.T) {
	for _, c := range []string{
		"echo pwned >&/home/u/.bashrc",        // bash: >&word with a non-number word redirects to the file
		"sort -uo/home/u/.bashrc /etc/passwd", // -o glued after another flag
		"uniq - /home/u/.bashrc",              // OUTPUT operand after stdin "-"
		"rg --pre rm x /home/u/project",       // --pre runs a command per file
		"tree -o /home/u/.bashrc",             // -o writes the listing
	} {
		d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c))
		if d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
		d = Decide(Policy{Mode: ModeDefault}, shell, cmd(c))
		if d.Behavior == Allow {
			t.Errorf("default %q: allowed without asking (%s)", c, d.Reason)
		}
	}
}

// TestAcceptEditsCannotTellOutside: ACCEPT_EDITS does not auto-allow file
// commands whose writes it cannot see (a target-directory flag, words the
// shell expands).
func TestAcceptEditsCannotTellOutside(t *testing.T) {
	wd := t.TempDir()
	for _, c := range []string{
		"cp --target-directory=/root/.ssh " + wd + "/authorized_keys", // write into ~/.ssh, no safety ask
		"rm -rf ${HOME}", // shell expands; engine sees <wd>/${HOME}
		"rm -rf $PWD/..", // engine sees <wd>, shell removes the parent
	} {
		d := Decide(Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}, shell, cmd(c))
		if d.Behavior == Allow {
			t.Errorf("accept_edits %q: allowed (%s)", c, d.Reason)
		}
	}
}

// TestDenyRuleHomeAndRelative: a deny rule written with "~" or relative to
// the working directory matches the path it names.
func TestDenyRuleHomeAndRelative(t *testing.T) {
	h, _ := os.UserHomeDir()
	wd := t.TempDir()
	for _, tc := range []struct{ pattern, path string }{
		{"~/.aws/**", filepath.Join(h, ".aws/credentials")},
		{"secrets/**", "secrets/prod.key"},
		{"./secrets/**", "secrets/prod.key"},
	} {
		p := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: ViewFileTool, Pattern: tc.pattern, Behavior: Deny}}}
		if d := Decide(p, viewFile, file(tc.path)); d.Behavior != Deny {
			t.Errorf("deny %s, read %s: %s (%s)", tc.pattern, tc.path, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleThroughSymlink: a deny rule on a directory is not bypassed
// through a symbolic link to it.
func TestDenyRuleThroughSymlink(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	wd := filepath.Join(base, "wd")
	os.MkdirAll(secret, 0o755)
	os.MkdirAll(wd, 0o755)
	os.WriteFile(filepath.Join(secret, "k"), []byte("x"), 0o600)
	if err := os.Symlink(secret, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: ViewFileTool, Pattern: secret + "/**", Behavior: Deny}}}
	if d := Decide(p, viewFile, file("link/k")); d.Behavior != Deny {
		t.Errorf("read %s/link/k (-> %s/k): %s (%s)", wd, secret, d.Behavior, d.Reason)
	}
}

// TestApprovalForTheReviewedInput: the human reviews the pending call
// (input A) and approves call id "c1"; meanwhile the agent re-sends "c1"
// with input B. The approval is for A, and B does not run on it.
func TestApprovalForTheReviewedInput(t *testing.T) {
	ctx := context.Background()
	w := newWorker(t, NewMemoryStore(), nil)
	if r := w.call(t, "s", "c1", "deploy", map[string]any{"env": "staging"}); r.Code != "approval_required" {
		t.Fatalf("first call: %v %s", r.Code, r.Text())
	}
	seen, _ := w.g.Pending(ctx, "", "c1") // what toolctl/the gateway shows the human
	if r := w.call(t, "s", "c1", "deploy", map[string]any{"env": "production"}); r.Code != "approval_required" {
		t.Fatalf("second call: %v", r.Code)
	}
	a, err := w.g.Approve(ctx, "", "c1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != seen[0].Digest {
		t.Errorf("human reviewed %s (digest %s) but the approval is for digest %s", seen[0].Input, seen[0].Digest, a.Digest)
	}
	if r := w.call(t, "s", "c1", "deploy", map[string]any{"env": "production"}); r.Code == "" {
		t.Errorf("unreviewed input ran: %s", r.Text())
	}
}

// TestConflictingCallNotOfferedForApproval: a call id waits for approval
// with input A; the same id is sent with input B. B's final offered B's
// approval by that id ("approve c1"), but approving c1 approves A, the
// pending call: a human who read B's final approved A. B's final now
// names no approval key and says why.
func TestConflictingCallNotOfferedForApproval(t *testing.T) {
	w := newWorker(t, NewMemoryStore(), nil)
	r := w.call(t, "s", "c1", "deploy", map[string]any{"env": "staging"})
	if r.Code != toolkit.CodeApprovalRequired || r.Metadata[MetaApprovalKey] != "c1" {
		t.Fatalf("first call: %s %v", r.Code, r.Metadata)
	}
	r = w.call(t, "s", "c1", "deploy", map[string]any{"env": "production"})
	if r.Code != toolkit.CodeApprovalRequired {
		t.Fatalf("second call: %s %q", r.Code, r.Text())
	}
	if k, ok := r.Metadata[MetaApprovalKey]; ok {
		t.Errorf("the second call's final offers approval key %v, which approves the first call's input", k)
	}
	if !strings.Contains(r.Text(), "new id") {
		t.Errorf("the second call's final does not say to use a new id: %q", r.Text())
	}
	// The same input again is the pending call: approvable as before.
	r = w.call(t, "s", "c1", "deploy", map[string]any{"env": "staging"})
	if r.Metadata[MetaApprovalKey] != "c1" {
		t.Errorf("the pending call re-sent: %v", r.Metadata)
	}
}

// TestMemoryPendingBounded: every call that asks for approval records a
// pending call (up to MaxPendingInput of its input), which only an
// approval removed: a caller sending approval-requiring calls under ever
// new ids grew a MemoryStore without bound. It keeps at most
// MaxMemoryPending, the oldest forgotten first, and the latest calls stay
// approvable.
func TestMemoryPendingBounded(t *testing.T) {
	st := NewMemoryStore()
	w := newWorker(t, st, nil)
	n := MaxMemoryPending + MaxMemoryPending/2
	for i := range n {
		if r := w.call(t, "s", fmt.Sprintf("c%d", i), "deploy", map[string]any{"env": "prod"}); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("call %d: %s %q", i, r.Code, r.Text())
		}
	}
	st.mu.Lock()
	got := len(st.pending)
	st.mu.Unlock()
	t.Logf("%d calls asked for approval: %d pending calls kept", n, got)
	if got > MaxMemoryPending {
		t.Errorf("%d pending calls kept after %d calls, want at most %d", got, n, MaxMemoryPending)
	}
	if _, err := w.g.Approve(context.Background(), "s", fmt.Sprintf("c%d", n-1), "alice"); err != nil {
		t.Errorf("the latest call cannot be approved: %v", err)
	}
}
