package builtin_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSharedWorkspaceEditsKeepEachOther: the workers of a fleet on one
// shared workspace each ordered only their own edits of a file, so two
// edits by two workers at once each read the file, and the one renamed
// in last dropped the other's change, both calls succeeding. An edit
// now also holds a lock on the file (flock) that every worker's edits
// take, and reads the file only once it holds the lock on the file its
// path still names.
func TestSharedWorkspaceEditsKeepEachOther(t *testing.T) {
	ws := t.TempDir()
	var workers []*toolkit.Toolkit
	for range 2 {
		tk, _ := fileKit(t, builtin.Config{Workspace: ws, SharedWorkspace: true})
		workers = append(workers, tk)
	}
	path := filepath.Join(ws, "f.txt")
	writeFile(t, path, "end\n")
	const n = 40
	errs := make(chan string, n)
	for i := range n {
		go func() {
			tk := workers[i%2]
			var r *toolkit.Response
			if i%3 == 0 { // the last line, "end", by a new line and itself
				r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "ranges": []any{-1, -1}, "content": fmt.Sprintf("edit %d\nend\n", i)})
			} else {
				r = invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "line_number": 1, "content": fmt.Sprintf("edit %d", i)})
			}
			if r.State != toolkit.StateSuccess {
				errs <- fmt.Sprintf("edit %d: %s %s", i, r.Code, r.Text())
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	got := readFile(t, path)
	for i := range n {
		if !strings.Contains(got, fmt.Sprintf("edit %d\n", i)) {
			t.Errorf("edit %d is lost", i)
		}
	}
	if t.Failed() {
		t.Logf("the file is\n%s", got)
	}
}
