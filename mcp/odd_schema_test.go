package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	switch mode := os.Getenv(mountTestServerEnv); mode {
	case "wide-schema", "deep-schema", "deep-result":
		os.Exit(oddSchemaServerMain(mode))
	}
}

// wideSchemaProperties is the properties of the input schema of the
// tool "wide" that oddSchemaServerMain lists in mode "wide-schema":
// about 1.3 MB of JSON, within MaxMessageBytes and over
// MaxServerToolBytes (a million, 13 MB, costs the same per property).
const wideSchemaProperties = 100_000

// oddSchemaServerMain is a stdio server, JSON-RPC written by hand, that
// lists the tool "echo" (answering with the name it was called by) and,
// in mode "wide-schema", the tool "wide", whose input schema has
// wideSchemaProperties properties, in mode "deep-schema", the tool
// "deep", whose input schema nests deepSchemaLevels deep, or in mode
// "deep-result", the tool "deep", whose result's structuredContent nests
// deepResultLevels deep.
func oddSchemaServerMain(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	var odd strings.Builder
	switch mode {
	case "wide-schema":
		odd.WriteString(`{"name":"wide","inputSchema":{"type":"object","properties":{`)
		for i := range wideSchemaProperties {
			if i > 0 {
				odd.WriteByte(',')
			}
			fmt.Fprintf(&odd, `"p%d":{}`, i)
		}
		odd.WriteString(`}}}`)
	case "deep-result":
		odd.WriteString(`{"name":"deep","inputSchema":{"type":"object"}}`)
	case "deep-schema":
		odd.WriteString(`{"name":"deep","inputSchema":{"type":"object","properties":{"a":`)
		odd.WriteString(strings.Repeat(`{"items":`, deepSchemaLevels))
		odd.WriteString(`{}` + strings.Repeat(`}`, deepSchemaLevels) + `}}}`)
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"o","version":"1"}}}`+"\n", m.ID, m.Params.ProtocolVersion)
		case "tools/list":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}},%s]}}`+"\n", m.ID, odd.String())
		case "tools/call":
			if mode == "deep-result" && m.Params.Name == "deep" {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":%s{}%s}}`+"\n",
					m.ID, strings.Repeat(`{"a":`, deepResultLevels), strings.Repeat(`}`, deepResultLevels))
				break
			}
			b, _ := json.Marshal(m.Params.Name)
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", m.ID, b)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", m.ID)
		}
		out.Flush()
	}
	return 0
}

// oddSchemaClient registers the tools of oddSchemaServerMain in mode in
// tk, its log written to log.
func oddSchemaClient(t *testing.T, mode string, tk *toolkit.Toolkit, log *lockedLog) *Client {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ServerConfig{Name: "o", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: mode},
		ConnectTimeout: Duration(5 * time.Minute)}, // a wide schema decoded under -race on a busy machine
		&Options{RetryInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A server listing a tool whose input schema has a hundred thousand
// properties (1.3 MB, within MaxMessageBytes; a million, 13 MB, cost
// ten times as much) had it converted, its order read,
// and the whole of it marshalled more than once before it was found past
// MaxServerToolBytes and skipped: about 800 MiB of heap at each listing for a million,
// which a server announcing list_changed had repeated every second. A
// schema that cannot fit in MaxServerToolBytes is found so before any of
// that, the tool skipped with a warning and the server's other tools
// served.
func TestWideSchemaSkippedCheaply(t *testing.T) {
	var log lockedLog
	tk := toolkit.New(nil)
	c := oddSchemaClient(t, "wide-schema", tk, &log)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := c.Tools(); len(got) != 1 || got[0] != ToolName("o", "echo") {
		t.Fatalf("registered %v, want echo alone", got)
	}
	if r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "c", Name: ToolName("o", "echo"), Input: map[string]any{}}, toolkit.WriterFuncs{}); r.Text() != "echo" {
		t.Errorf("echo: %s/%s %q", r.State, r.Code, r.Text())
	}
	if !strings.Contains(log.String(), "MaxServerToolBytes") || !strings.Contains(log.String(), "tool=wide") {
		t.Errorf("no warning that wide is over MaxServerToolBytes; log:\n%s", log.String())
	}
	// The go-sdk's decoding and checking of the listing take most of the
	// ~90 MiB it allocates now; the tool's conversion, ordering and
	// encoding took ~135 MiB more (228 MiB in all).
	if got := after.TotalAlloc - before.TotalAlloc; got > 160<<20 {
		t.Errorf("the listing allocated %d MiB, want less than 160", got>>20)
	}
}

// leastSize is at most the size a schema's tool is announced with, its
// titles stripped, whatever they hold.
func TestLeastSizeBoundsAnnouncedSize(t *testing.T) {
	empty := announcedSize(announced("t", "", "", map[string]any{}, nil, nil))
	for _, raw := range []string{
		`{}`,
		`{"type":"object"}`,
		`{"title":"x","properties":{"a":{"title":"` + strings.Repeat("t", 1000) + `","type":"string"}}}`,
		`{"properties":{"title":{"type":"string","enum":["a","bb",1,1.5,-1e300,true,null]}},"title":{"deep":[[[{}]]]}}`,
		`{"properties":{"p":{"type":"array","items":{"anyOf":[{"type":"integer","minimum":1},{"type":"null"}]}}},"$defs":{"d":{"title":"d","type":"object"}}}`,
		`{"type":"object","properties":{"x":{"description":"` + strings.Repeat("é", 500) + `"}}}`,
	} {
		var schema any
		if err := json.Unmarshal([]byte(raw), &schema); err != nil {
			t.Fatal(err)
		}
		least := leastSize(schema, math.MaxInt)
		converted, err := inputSchema(schema)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if n := announcedSize(announced("t", "", "", converted, nil, nil)) - empty; least > n {
			t.Errorf("%.80s: leastSize %d, more than the %d bytes it adds to its tool's announcement", raw, least, n)
		}
	}
	if overSchema(map[string]any{"title": strings.Repeat("t", 2*MaxServerToolBytes)}) {
		t.Error("a schema over MaxServerToolBytes in its title alone is over")
	}
}

// deepSchemaLevels is how deep the input schema of the tool "deep" of
// oddSchemaServerMain nests: past the 1000 levels the go-sdk decodes.
const deepSchemaLevels = 9_900

// deepResultLevels is how deep the structuredContent of the tool "deep"
// of oddSchemaServerMain nests: past the 1000 levels the go-sdk decodes.
const deepResultLevels = 2_000

// A stdio server's message nested past the 1000 levels the go-sdk
// decodes breaks its connection, which cannot be helped without the
// go-sdk's reader: the go-sdk refuses the whole message before handing
// it on, so that neither the request it answers nor its tools are known.
// A listing holding one such schema fails whole, the server's other
// tools with it, and is tried again in the background; a call answered
// with such a result fails, and the calls after it are served on a new
// session. doc.go says so.
func TestDeepMessageOverStdio(t *testing.T) {
	var log lockedLog
	tk := toolkit.New(nil)
	c := oddSchemaClient(t, "deep-schema", tk, &log)
	err := c.Register(testCtx(t), tk)
	if err == nil || !strings.Contains(err.Error(), "nesting depth") || len(c.Tools()) != 0 {
		t.Fatalf("a listing with a schema nested %d deep: %v, registered %v; want the listing failed saying it nests too deep", deepSchemaLevels, err, c.Tools())
	}

	tk = toolkit.New(nil)
	c = oddSchemaClient(t, "deep-result", tk, &log)
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	call := func(tool string) *toolkit.Response {
		return tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: tool, Name: ToolName("o", tool), Input: map[string]any{}}, toolkit.WriterFuncs{})
	}
	before := c.current()
	if r := call("deep"); r.State == toolkit.StateSuccess || !strings.Contains(r.Text(), "nesting depth") {
		t.Errorf("a result nested %d deep: %s/%s %q, want it failed saying it nests too deep", deepResultLevels, r.State, r.Code, r.Text())
	}
	if r := call("echo"); r.State != toolkit.StateSuccess || r.Text() != "echo" {
		t.Errorf("the call after it: %s/%s %q", r.State, r.Code, r.Text())
	}
	if c.current() == before {
		t.Error("the session was kept")
	}
}
