package skill

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolbus/toolbus/toolkit"
)

// TestViewerNotFoundNameIsSafe: the viewer is a raw tool, so the skill
// name reaches it as the caller sent it, and its not-found error quoted
// it whole: a name that is not UTF-8 (a msgpack caller can send one)
// made an answer that is no msgpack str for a client in another
// language, and a name of a megabyte an answer of a megabyte. The name
// is quoted as valid UTF-8, invalid bytes shown as U+FFFD, and cut
// after 256 bytes.
func TestViewerNotFoundNameIsSafe(t *testing.T) {
	tk, _ := viewerKit(t)
	for _, c := range []struct{ name, skill, want string }{
		{"invalid", "caf\xe9", "SkillNotFoundError: Skill 'caf\uFFFD' not found."},
		{"huge", strings.Repeat("é", 1<<19), "SkillNotFoundError: Skill '" + strings.Repeat("é", 128) + "…' not found."},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c", Name: ViewerName, Session: "s1", Input: map[string]any{"skill": c.skill}})
		if r.Code != toolkit.CodeToolError || r.Text() != c.want || !utf8.ValidString(r.Text()) {
			t.Errorf("%s: %s %s %.300q, want %q", c.name, r.State, r.Code, r.Text(), c.want)
		}
	}
}
