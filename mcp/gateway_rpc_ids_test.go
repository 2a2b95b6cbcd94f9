package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// JSON-RPC ids the go-sdk's streamable server cannot answer under: it reads
// a numeric id as a float64 and keeps its int64 part (1.5 was answered as
// 1), and it collects a batch's calls by id in a map (two requests with id
// 1 got one answer, the other nothing). The gateway refuses such a POST
// (400, a JSON-RPC Invalid Request with id null) before the go-sdk reads
// it, and passes every other body on untouched.

// rpcPost POSTs body in the session id (none: "") at protocol version and
// returns the status and the JSON-RPC messages of the answer, whether it
// came as JSON or as an event stream.
func rpcPost(t *testing.T, u, session, version, body string) (int, []map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := (&http.Client{Timeout: guardTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var payloads [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				payloads = append(payloads, []byte(strings.TrimSpace(data)))
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		payloads = append(payloads, b)
	}
	var msgs []map[string]any
	for _, p := range payloads {
		p = bytes.TrimSpace(p)
		if len(p) == 0 {
			continue
		}
		if p[0] == '[' {
			var batch []map[string]any
			if err := json.Unmarshal(p, &batch); err != nil {
				t.Fatalf("answer %q: %v", p, err)
			}
			msgs = append(msgs, batch...)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("answer %q: %v", p, err)
			}
			continue // a plain-text error of the go-sdk's
		}
		msgs = append(msgs, m)
	}
	return resp.StatusCode, msgs
}

// openSessionAt opens a session at protocol version and returns its id.
func openSessionAt(t *testing.T, u, version string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"ids","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Timeout: guardTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize at %s: %d, session %q", version, resp.StatusCode, id)
	}
	if code, _ := rpcPost(t, u, id, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", code)
	}
	return id
}

// TestGatewayRefusesUnanswerableIDs: a request whose id the go-sdk would
// answer under another id, or a batch in which two calls share an id,
// is refused whole, naming the problem; the client is never answered
// under an id it did not send, nor left without an answer.
func TestGatewayRefusesUnanswerableIDs(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	const v = "2025-03-26" // batches are allowed up to this version
	session := openSessionAt(t, u, v)

	for _, tc := range []struct {
		name, body, want string
	}{
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, "1.5"},
		{"fractional id in exponent form", `{"jsonrpc":"2.0","id":15e-1,"method":"ping"}`, "15e-1"},
		{"id beyond float64's exact integers", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "9007199254740993"},
		{"id beyond int64", `{"jsonrpc":"2.0","id":1e30,"method":"ping"}`, "1e30"},
		{"two calls with id 1", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "duplicate"},
		{"ids 1 and 1.0", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":1.0,"method":"ping"}]`, "duplicate"},
		{"ids 1 and 1.5", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`, "1.5"},
		{"id not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}", "not Unicode text"},
		{"id with an unpaired surrogate", `{"jsonrpc":"2.0","id":"a\ud800b","method":"ping"}`, "not Unicode text"},
		{"ids not UTF-8 in a batch", "[{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":\"\xfe\",\"method\":\"ping\"}]", "not Unicode text"},
		{"the same string id twice", `[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"\u0061","method":"ping"}]`, "duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msgs := rpcPost(t, u, session, v, tc.body)
			if code != http.StatusBadRequest || len(msgs) != 1 {
				t.Fatalf("%s: HTTP %d, answers with ids %v; want 400 and one Invalid Request error", tc.body, code, answerIDs(msgs))
			}
			m := msgs[0]
			e, _ := m["error"].(map[string]any)
			id, hasID := m["id"]
			if e == nil || e["code"] != float64(-32600) || !hasID || id != nil {
				t.Fatalf("%s: answered %v; want an error of code -32600 with id null", tc.body, m)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, tc.want) {
				t.Errorf("%s: error %q does not name %q", tc.body, msg, tc.want)
			}
		})
	}

	// What the go-sdk answers rightly goes through, answered under the
	// ids the client sent.
	for _, tc := range []struct {
		name, body string
		ids        []any
	}{
		{"integer id", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, []any{float64(7)}},
		{"string id", `{"jsonrpc":"2.0","id":"1.5","method":"ping"}`, []any{"1.5"}},
		{"string id with a surrogate pair", `{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}`, []any{"😀"}},
		{"batch of distinct ids", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"id":2}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]`,
			[]any{float64(1), "1", float64(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msgs := rpcPost(t, u, session, v, tc.body)
			if code != http.StatusOK {
				t.Fatalf("%s: HTTP %d, answers %v", tc.body, code, msgs)
			}
			got := map[any]bool{}
			for _, m := range msgs {
				if m["error"] != nil {
					t.Errorf("%s: error %v", tc.body, m)
				}
				got[m["id"]] = true
			}
			for _, id := range tc.ids {
				if !got[id] {
					t.Errorf("%s: no answer with id %#v among %v", tc.body, id, msgs)
				}
			}
			if len(msgs) != len(tc.ids) {
				t.Errorf("%s: %d answers, want %d: %v", tc.body, len(msgs), len(tc.ids), msgs)
			}
		})
	}

	// The session was not harmed by what was refused.
	if code, msgs := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":99,"method":"ping"}`); code != http.StatusOK || len(msgs) != 1 || msgs[0]["id"] != float64(99) {
		t.Fatalf("ping after the refusals: HTTP %d, answers %v", code, msgs)
	}
}

// answerIDs are the ids of msgs, for a failure's message.
func answerIDs(msgs []map[string]any) []any {
	ids := make([]any, len(msgs))
	for i, m := range msgs {
		ids[i] = m["id"]
	}
	return ids
}

// TestGatewayIDCheckKeepsBody: the body the id check has read reaches the
// go-sdk whole, up to the go-sdk's bound, and one beyond it is still
// refused as too large (413), not cut and served.
func TestGatewayIDCheckKeepsBody(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	session := openSessionAt(t, u, "2025-06-18")
	pad := func(n int) string {
		return `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", n) + `"}}}`
	}
	big := pad(gatewayMaxBody - len(pad(0)))
	if code, msgs := rpcPost(t, u, session, "2025-06-18", big); code != http.StatusOK || len(msgs) != 1 || msgs[0]["id"] != float64(5) || msgs[0]["error"] != nil {
		t.Fatalf("a ping of %d bytes: HTTP %d, answers %v", len(big), code, msgs)
	}
	if code, _ := rpcPost(t, u, session, "2025-06-18", big+" "); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a ping of %d bytes: HTTP %d, want 413", len(big)+1, code)
	}
}
