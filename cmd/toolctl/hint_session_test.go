package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApprovalHintNamesTheSession: the approve command of the hint names
// the caller's session (and identity): without them toolctl approve takes
// the call id pending in any session, and where this call was not
// recorded as pending (a full bucket) or has expired, it approved another
// session's call that happened to use the same id.
func TestApprovalHintNamesTheSession(t *testing.T) {
	var stderr bytes.Buffer
	e := &env{stderr: &stderr, cfg: &config.Config{}}
	e.cfg.NATS.Identity = "bob"
	final := &toolkit.Response{Metadata: map[string]any{permission.MetaApprovalKey: "c1"}}
	approvalHint(e, "s 1", final)
	if want := "toolctl approve --caller bob --session 's 1' c1"; !strings.Contains(stderr.String(), want) {
		t.Errorf("hint %q lacks %q", stderr.String(), want)
	}
	stderr.Reset()
	e.cfg.NATS.Identity = ""
	approvalHint(e, "s1", final)
	if want := "toolctl approve --session s1 c1"; !strings.Contains(stderr.String(), want) {
		t.Errorf("hint %q lacks %q", stderr.String(), want)
	}
}
