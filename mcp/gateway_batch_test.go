package mcp

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// A JSON-RPC batch (protocol 2025-03-26 and older) was bounded only by the
// body's 4 MiB: some 70,000 pings or notifications, which MaxSessionCalls
// does not count (only requests that reach the fleet), each ping handled
// on a goroutine of its own and each message decoded and held by the
// go-sdk. A batch of more than maxBatch messages is refused whole (HTTP
// 400, a JSON-RPC Invalid Request naming the bound) before the go-sdk
// reads it; one of maxBatch is served.
func TestGatewayBatchBounded(t *testing.T) {
	f := startFleet(t)
	u := serveGatewayHTTP(t, newGateway(t, f))
	const v = "2025-03-26"
	session := openSessionAt(t, u, v)
	pings := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"ping"}`
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	if code, msgs := rpcPost(t, u, session, v, pings(maxBatch)); code != http.StatusOK || len(msgs) != maxBatch {
		t.Fatalf("a batch of %d pings: HTTP %d, %d answers", maxBatch, code, len(msgs))
	}
	for _, tc := range []struct{ name, body string }{
		{"pings", pings(maxBatch + 1)},
		{"notifications", "[" + strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/initialized"},`, maxBatch) + `{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
	} {
		for _, s := range []string{session, ""} {
			code, msgs := rpcPost(t, u, s, v, tc.body)
			if code != http.StatusBadRequest || len(msgs) != 1 || msgs[0]["id"] != nil {
				t.Fatalf("a batch of %d %s (session %q): HTTP %d, %d answers; want 400 and one error", maxBatch+1, tc.name, s, code, len(msgs))
			}
			if e, _ := msgs[0]["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || !strings.Contains(e["message"].(string), "more than "+strconv.Itoa(maxBatch)+" messages") {
				t.Fatalf("a batch of %d %s: %v; want an Invalid Request naming the bound", maxBatch+1, tc.name, msgs[0])
			}
		}
	}
	if code, _ := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusOK {
		t.Fatalf("the session after refused batches: ping HTTP %d", code)
	}
}
