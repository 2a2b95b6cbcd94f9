package mcp

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGatewayDuplicateInFlightID: a request whose JSON-RPC id repeats one
// of the session's requests still in flight, sent in another POST, is
// refused (HTTP 400, a JSON-RPC Invalid Request under that id) without
// reaching the fleet; the request in flight goes on, is answered on its
// own POST, and a notifications/cancelled of the id cancels it alone.
// Once it is answered the id may be used again.
func TestGatewayDuplicateInFlightID(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			session := openSessionAt(t, u, v)
			type answer struct {
				code int
				msgs []map[string]any
			}
			first := make(chan answer, 1)
			go func() {
				code, msgs := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
				first <- answer{code, msgs}
			}()
			select {
			case <-f.started:
			case <-time.After(guardTimeout):
				t.Fatal("slow never started")
			}
			for _, body := range []string{
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
				`{"jsonrpc":"2.0","id":7.0,"method":"ping"}`,
			} {
				code, msgs := rpcPost(t, u, session, v, body)
				if code != http.StatusBadRequest || len(msgs) != 1 || msgs[0]["id"] != float64(7) {
					t.Fatalf("%s while id 7 runs: HTTP %d, %v; want 400 and an error for id 7", body, code, msgs)
				}
				if e, _ := msgs[0]["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || !strings.Contains(e["message"].(string), "in-flight") {
					t.Fatalf("%s while id 7 runs: %v; want an Invalid Request naming the id in flight", body, msgs[0])
				}
			}
			if code, _ := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); code != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: HTTP %d", code)
			}
			waitCancelled(t, f, guardTimeout, "the cancel of id 7")
			a := <-first
			if a.code != http.StatusOK || len(a.msgs) != 1 || a.msgs[0]["id"] != float64(7) {
				t.Fatalf("the call in flight: HTTP %d, %v; want its answer, id 7", a.code, a.msgs)
			}
			if len(f.started) > 0 {
				t.Fatal("a refused request started the tool")
			}
			code, msgs := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}`)
			if code != http.StatusOK || len(msgs) != 1 || msgs[0]["id"] != float64(7) || !strings.Contains(fmt.Sprint(msgs[0]["result"]), "again") {
				t.Fatalf("id 7 once answered, used again: HTTP %d, %v", code, msgs)
			}
		})
	}
}
