package bus_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForgedAnswersDroppedUnread: any caller may publish on
// tools.answer.<instance>.*, so answers with tokens nobody waits for are
// dropped before they are decoded. Before, each was decoded first (up to
// 16 times its size plus 64 KiB) and an undecodable one logged a warning:
// a caller's flood cost every worker decoding and a log line per message.
func TestForgedAnswersDroppedUnread(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	var logs natstest.Buffer
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, &bus.ClientOptions{Asker: func(ctx context.Context, method string, params any) (any, error) {
		// Published before the client's answer on the same connection, so
		// the worker has handled them when the tool hears the answer.
		for i := range 100 {
			if err := nc.Publish(wire.AnswerSubject("w1", "forged"+strconv.Itoa(i)), []byte{0xc1}); err != nil {
				return nil, err
			}
		}
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "greet"}); r.Text() != "accept, Ada" {
		t.Fatalf("the call: %+v", r)
	}
	if n := strings.Count(logs.String(), "undecodable answer"); n > 0 {
		t.Fatalf("the worker decoded (and logged) %d answers nobody waited for", n)
	}
}
