package skill_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/skill"
)

// TestServeNotFoundNameIsSafe: a worker's answer to a request for a
// skill it does not have quoted the name as the asker sent it, so a
// name that is not UTF-8 made a reply that is no msgpack str, and a
// name as long as the request could be made a reply over max_payload,
// whose replacement quoted it too: the asker got no answer at all and
// waited out its whole wait. The name is quoted as the viewer quotes it.
func TestServeNotFoundNameIsSafe(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 64 << 10 })
	_, set := skillWorker(t, t.TempDir())
	if _, err := skill.Serve(natstest.Conn(t, s), "w1", set, nil); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Conn(t, s)
	long := "SkillNotFoundError: Skill '" + strings.Repeat("n", 256) + "…' not found."
	for _, c := range []struct {
		what  string
		codec wire.Codec
		name  string
		want  string
	}{
		{"invalid", wire.Msgpack, "caf\xe9", "SkillNotFoundError: Skill 'caf\uFFFD' not found."},
		// Requests just within max_payload, whose header and framing
		// take 20 and 60 bytes.
		{"as long as a request may be", wire.Msgpack, strings.Repeat("n", 64<<10-20), long},
		{"as long as a request may be", wire.JSON, strings.Repeat("n", 64<<10-60), long},
	} {
		data, err := c.codec.Marshal(&wire.SkillRequest{Name: c.name})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		m, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: wire.SkillSubject("w1"), Header: c.codec.Header(), Data: data})
		cancel()
		if err != nil {
			t.Errorf("%s (%s): no answer: %v", c.what, c.codec, err)
			continue
		}
		var r wire.SkillReply
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &r); err != nil || r.Error != c.want || !utf8.ValidString(r.Error) {
			t.Errorf("%s (%s): %.300q, %v; want %q", c.what, c.codec, r.Error, err, c.want)
		}
	}
}

// TestServeSubjectCharactersInNames: a skill's name is no subject token
// (skill requests go to the worker's instance subject), so NATS's
// special characters in it are plain text, and the skill is served as
// any other.
func TestServeSubjectCharactersInNames(t *testing.T) {
	s := natstest.Server(t)
	root := t.TempDir()
	_, set := skillWorker(t, root)
	writeSkill(t, filepath.Join(root, "basic", "subj"), "a.b.*.>", "tools.call.> *", "# Subject")
	if err := os.WriteFile(filepath.Join(root, "basic", "subj", "notes.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := skill.Serve(natstest.Conn(t, s), "w1", set, nil); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Conn(t, s)
	if body, err := skill.Fetch(natstest.Ctx(t), nc, []string{"w1"}, "a.b.*.>", "basic"); err != nil || body != "# Subject" {
		t.Errorf("Fetch: %q, %v", body, err)
	}
	if r, err := skill.FetchFile(natstest.Ctx(t), nc, []string{"w1"}, "a.b.*.>", "basic", "notes.txt"); err != nil || r.Text != "notes" {
		t.Errorf("FetchFile: %+v, %v", r, err)
	}
	if body, err := skill.Fetch(natstest.Ctx(t), nc, []string{"w1"}, "pdf", "basic"); err != nil || body != "# PDF" {
		t.Errorf("Fetch(pdf) beside it: %q, %v", body, err)
	}
}
