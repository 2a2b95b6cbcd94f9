package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "ping-flood" {
		os.Exit(pingFloodServerMain())
	}
}

// pingFloodN is how many pings the ping-flood server sends in a call.
const pingFloodN = 20_000

// pingFloodServerMain is a stdio server (the re-executed test binary)
// with one tool, "flood", whose call it answers with pingFloodN ping
// requests and then a progress notification, reading its stdin no more:
// the client's answers to the pings fill the pipe.
func pingFloodServerMain() int {
	dec := json.NewDecoder(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Meta            struct {
					Token string `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if dec.Decode(&m) != nil {
			return 0
		}
		var result string
		switch m.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"p","version":"1"}}`, m.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			for i := range pingFloodN {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":"p%d","method":"ping"}`+"\n", i)
			}
			fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":1}}`+"\n", m.Params.Meta.Token)
			out.Flush()
			select {}
		default:
			if m.ID == nil {
				continue
			}
			result = `{}`
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
		out.Flush()
	}
}

// The go-sdk answers each request of a server on a goroutine of its
// own, and a stdio server that sends requests (pings) without reading
// its stdin had every answer block in its write: a goroutine, and the
// request, kept for each, without bound (a server writing pings as fast
// as a pipe takes them made the worker run out of memory). Past
// maxServerAsks requests unanswered the server's further ones are
// dropped unread.
func TestServerAskFloodBounded(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServerConfig{Name: "pings", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "ping-flood"}, Timeout: Duration(time.Minute)}
	tk, _ := mount(t, cfg)
	before := runtime.NumGoroutine()
	sent := make(chan struct{})
	go tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "f", Name: "mcp__pings__flood", Input: map[string]any{}}, toolkit.WriterFuncs{Prog: func(toolkit.Progress) error {
		close(sent) // every ping was read
		return nil
	}})
	select {
	case <-sent:
	case <-time.After(guardTimeout):
		t.Fatal("the progress after the pings did not come")
	}
	// The goroutines of the pings read are started at once, one after
	// another: the most seen in a while.
	most := 0
	for range 20 {
		most = max(most, runtime.NumGoroutine()-before)
		time.Sleep(50 * time.Millisecond)
	}
	if most > 2*maxServerAsks+100 {
		t.Errorf("after %d pings of a server that reads no answers, %d more goroutines", pingFloodN, most)
	}
}
