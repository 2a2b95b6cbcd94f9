package mcp

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The go-sdk logs an error for each duplicate notifications/initialized
// of a session and for each request of a session-less POST that does not
// initialize, and the gateway passed its log on to the operator's: one
// batch POST of an old protocol version (thousands of messages) wrote a
// line for each. At most sdkLogPerSecond of the go-sdk's lines a second
// are passed on, the next one passed counting those left out.
func TestGatewaySDKLogBounded(t *testing.T) {
	f := startFleet(t)
	var log lockedLog
	g := startGateway(t, f.srv, &GatewayOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	var now atomic.Int64 // the limit's clock, moved by hand
	now.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	g.sdkLimit.now = func() time.Time { return time.Unix(0, now.Load()) }
	u := serveGatewayHTTP(t, g)
	const v, n = "2025-03-26", 1000
	count := func(what string) int { return strings.Count(log.String(), what) }
	batch := func(msg string) string { return "[" + strings.Repeat(msg+",", n-1) + msg + "]" }

	session := openSessionAt(t, u, v)
	if code, _ := rpcPost(t, u, session, v, batch(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); code != http.StatusAccepted {
		t.Fatalf("a batch of notifications: HTTP %d", code)
	}
	// The session's messages are handled in order: once the ping is
	// answered, every notification before it has been.
	if code, _ := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusOK {
		t.Fatalf("ping: HTTP %d", code)
	}
	if got := count("duplicate initialized notification"); got > sdkLogPerSecond {
		t.Fatalf("one batch of %d duplicate notifications/initialized logged %d lines; want at most %d", n, got, sdkLogPerSecond)
	}
	// Session-less: base answers each request as invalid before an
	// initialize, and logs it.
	calls := make([]string, n)
	for i := range calls {
		calls[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/list"}`
	}
	if code, msgs := rpcPost(t, u, "", v, "["+strings.Join(calls, ",")+"]"); len(msgs) != n {
		t.Fatalf("a session-less batch of %d requests: HTTP %d, %d answers", n, code, len(msgs))
	}
	if got := count("method invalid during initialization"); got > 0 {
		t.Fatalf("in the same second, with the bound reached: %d more lines of the go-sdk's", got)
	}
	if !strings.Contains(log.String(), "duplicate initialized notification") {
		t.Fatal("nothing of the go-sdk's passed")
	}
	now.Add(int64(time.Second))
	if code, _ := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("a notification: HTTP %d", code)
	}
	if code, _ := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusOK {
		t.Fatalf("ping: HTTP %d", code)
	}
	_, after, ok := strings.Cut(log.String(), "suppressed=")
	left, _ := strconv.Atoi(strings.Fields(after + " ")[0])
	if !ok || left < 2*n-sdkLogPerSecond {
		t.Fatalf("the next second's first line does not count the %d lines left out:\n%s", 2*n-sdkLogPerSecond, log.String()[max(0, len(log.String())-2000):])
	}
}
