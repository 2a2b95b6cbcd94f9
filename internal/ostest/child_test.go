package ostest

import (
	"os"
	"testing"
)

// TestInChild: the body runs in the child alone (its environment marks
// it), and a child's skip reaches the parent.
func TestInChild(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		if !InChild(t, "TOOLBUS_TEST_OSTEST_CHILD") {
			return
		}
		if os.Getenv("TOOLBUS_TEST_OSTEST_CHILD") != "1" {
			t.Fatal("the body ran outside the child")
		}
	})
	t.Run("skips", func(t *testing.T) {
		skipped := false
		t.Cleanup(func() {
			if os.Getenv("TOOLBUS_TEST_OSTEST_CHILD") == "" && !skipped {
				t.Error("the child's skip did not reach the parent")
			}
		})
		defer func() { skipped = t.Skipped() }()
		if !InChild(t, "TOOLBUS_TEST_OSTEST_CHILD") {
			return
		}
		t.Skip("skipped in the child")
	})
}
