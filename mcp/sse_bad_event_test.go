package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/toolbus/toolbus/toolkit"
)

// A Streamable HTTP server answering a call with an event stream one of
// whose events holds data that is not a JSON-RPC message (garbage, JSON
// nested past the go-sdk's 1000 levels) broke the session: the go-sdk
// failed the connection, every call running on it ended as
// MCPConnectionError and the session was replaced. Such an event now
// fails its call alone with tool_error quoting the start of its data, as
// an application/json answer that is not a JSON-RPC message does; a call
// in flight beside it succeeds and the session stays.
func TestBadEventFailsCallAlone(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"garbage":  {"<html>oops</html>", `not a JSON-RPC message (unmarshaling jsonrpc message: json: invalid character '<' looking for beginning of value: <html>oops</html>); the data begins "<html>oops</html>"`},
		"deep":     {strings.Repeat("[", 1001) + strings.Repeat("]", 1001), `not a JSON-RPC message (unmarshaling jsonrpc message: json: exceeded maximum nesting depth of 1000); the data begins "[[[[`},
		"version":  {`{"jsonrpc":"1.0","id":1,"result":{}}`, `not a JSON-RPC message (invalid message version tag "1.0"; expected "2.0"); the data begins "{\"jsonrpc\":\"1.0\"`},
		"no field": {"{}\n<p>oops</p>", `holding a line that is no field of an event; the line begins "<p>oops</p>"`},
	} {
		data := tc.data
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int64
			arrived, release := make(chan struct{}), make(chan struct{})
			u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
				w.Header().Set("Content-Type", "text/event-stream")
				switch calls.Add(1) {
				case 1: // the call beside, answered once the other has ended
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
					close(arrived)
					select {
					case <-release:
					case <-time.After(time.Minute):
					}
					fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"beside\"}]}}\n\n", id)
				case 2:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
				default:
					fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"again\"}]}}\n\n", id)
				}
			})
			tk, c := mount(t, ServerConfig{Name: "amiss", Transport: TransportStreamableHTTP, URL: u, Timeout: Duration(2 * time.Minute)})
			before := c.current()
			beside := make(chan result, 1)
			go func() {
				var r result
				defer func() { beside <- r }() // run's t.Fatal ends this goroutine
				r = run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "beside"})
			}()
			<-arrived
			r := run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "bad"})
			close(release)
			b := <-beside
			if b.final == nil {
				t.Fatal("the call beside it ended without a final response")
			}
			t.Logf("bad call: %s/%s %.300q; beside: %s/%s %.200q", r.final.State, r.final.Code, r.final.Text(), b.final.State, b.final.Code, b.final.Text())
			if r.final.Code != toolkit.CodeToolError || !strings.Contains(r.final.Text(), tc.want) {
				t.Errorf("a call answered with the event %.40q: %s/%s %.300q; want tool_error saying %q",
					data, r.final.State, r.final.Code, r.final.Text(), tc.want)
			}
			if b.final.State != toolkit.StateSuccess || b.final.Text() != "beside" || c.current() != before || calls.Load() != 2 {
				t.Errorf("the call beside it: %s/%s %.300q; session kept %v; %d calls sent; want beside, the session kept, 2 calls",
					b.final.State, b.final.Code, b.final.Text(), c.current() == before, calls.Load())
			}
		})
	}
}

// The check passes a stream of good events on byte for byte however it is
// read, ends it with the request's failure at a bad event (the events
// before it passed on), and passes on the part of an event a broken
// stream cut, with the break, for the go-sdk to resume.
func TestEventCheckStream(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	good := "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n" +
		": a comment\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"result\":{}}\r\n\r\n" +
		"event: other\ndata: not json\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}" // cut by the end
	got, err := io.ReadAll(&eventCheck{body: io.NopCloser(iotest.OneByteReader(strings.NewReader(good))), id: id, status: 200})
	if err != nil || string(got) != good {
		t.Errorf("good events read byte by byte: %v, %q; want them as sent", err, got)
	}

	bad := good[:strings.Index(good, ": a comment")] + "data: {\"jsonrpc\":\"2.0\",\"id\":7,\n\n" + "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"
	got, err = io.ReadAll(&eventCheck{body: io.NopCloser(strings.NewReader(bad)), id: id, status: 200})
	first, rest, _ := strings.Cut(string(got), "\n\n")
	var failure struct {
		ID    int `json:"id"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err != nil || first+"\n\n" != good[:strings.Index(good, ": a comment")] ||
		!strings.HasPrefix(rest, "event: message\ndata: ") || !strings.HasSuffix(rest, "\n\n") ||
		json.Unmarshal([]byte(strings.TrimPrefix(rest, "event: message\ndata: ")), &failure) != nil ||
		failure.ID != 7 || !strings.Contains(failure.Error.Message, `the data begins "{\"jsonrpc\":\"2.0\",\"id\":7,"`) {
		t.Errorf("a bad event after a good one: %v, %q; want the good one, then the failure of request 7 quoting the bad one, and the end", err, got)
	}

	broken := errors.New("connection reset")
	cut := "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"res"
	got, err = io.ReadAll(&eventCheck{body: io.NopCloser(io.MultiReader(strings.NewReader(cut), iotest.ErrReader(broken))), id: id, status: 200})
	if err != broken || string(got) != cut {
		t.Errorf("an event cut by a broken stream: %v, %q; want %q and the break", err, got, cut)
	}
}
