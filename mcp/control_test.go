package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// TestServeRuntimeHeaders rotates a server's headers through the control
// subject on a real NATS server, in JSON and msgpack, and checks the
// go-sdk peer sees them on the same session; bad requests change nothing.
func TestServeRuntimeHeaders(t *testing.T) {
	p := startHTTPPeer(t, false)
	ctx := testCtx(t)
	tk := toolkit.New(nil)
	servers, err := Mount(ctx, tk, []ServerConfig{{Name: "go", Transport: TransportStreamableHTTP, URL: p.url(), Headers: map[string]string{"X-Api-Key": "static"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { servers.Close() })

	nc := natstest.Connect(t, natstest.Embedded(t, false))
	sub, err := ServeRuntimeHeaders(nc, "w1", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })

	key := func() string {
		t.Helper()
		r := run(t, ctx, tk, "mcp__go__headers", nil)
		if r.final.State != toolkit.StateSuccess {
			t.Fatalf("final = %+v", r.final)
		}
		return r.final.Text()
	}
	request := func(body []byte, asJSON bool) wire.HeadersReply {
		t.Helper()
		m := &nats.Msg{Subject: wire.HeadersSubject("w1"), Data: body, Header: nats.Header{}}
		if asJSON {
			m.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
		}
		resp, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply wire.HeadersReply
		if asJSON {
			if resp.Header.Get(wire.HeaderContentType) != wire.ContentTypeJSON {
				t.Errorf("a JSON request got a reply with Content-Type %q", resp.Header.Get(wire.HeaderContentType))
			}
			err = json.Unmarshal(resp.Data, &reply)
		} else {
			err = msgpack.Unmarshal(resp.Data, &reply)
		}
		if err != nil {
			t.Fatalf("reply %q: %v", resp.Data, err)
		}
		return reply
	}
	packed := func(req wire.HeadersRequest) []byte {
		b, err := msgpack.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	if k := key(); k != "static" {
		t.Fatalf("key = %q", k)
	}
	c, _ := servers.Get("go")
	session := c.current().cs.ID()

	if r := request([]byte(`{"server":"go","headers":{"X-Api-Key":"json-1"}}`), true); !r.OK {
		t.Fatalf("JSON rotation: %+v", r)
	}
	if k := key(); k != "json-1" {
		t.Fatalf("key after the JSON rotation = %q", k)
	}
	if r := request(packed(wire.HeadersRequest{Server: "go", Headers: map[string]string{"X-Api-Key": "mp-2"}}), false); !r.OK {
		t.Fatalf("msgpack rotation: %+v", r)
	}
	if k := key(); k != "mp-2" {
		t.Fatalf("key after the msgpack rotation = %q", k)
	}

	bad := []struct {
		name   string
		body   []byte
		asJSON bool
		want   string
	}{
		{"undecodable JSON", []byte(`{"server":`), true, "undecodable"},
		{"undecodable msgpack", []byte{0xc1}, false, "undecodable"},
		{"unknown server", []byte(`{"server":"nope","headers":{"X-Api-Key":"x"}}`), true, `no MCP server named "nope"`},
		{"reserved header", []byte(`{"server":"go","headers":{"Host":"evil"}}`), true, "rejected"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := request(tt.body, tt.asJSON)
			if r.OK || !strings.Contains(r.Error, tt.want) {
				t.Errorf("reply = %+v, want an error containing %q", r, tt.want)
			}
		})
	}
	if k := key(); k != "mp-2" {
		t.Fatalf("key after rejected requests = %q", k)
	}
	if r := request([]byte(`{"server":"go","headers":{}}`), true); !r.OK {
		t.Fatalf("reset: %+v", r)
	}
	if k := key(); k != "static" {
		t.Fatalf("key after an empty map = %q, want the configured one", k)
	}
	if got := c.current().cs.ID(); got != session {
		t.Errorf("session changed: %q → %q", session, got)
	}
}

func TestServeRuntimeHeadersBadInput(t *testing.T) {
	nc := natstest.Connect(t, natstest.Embedded(t, false))
	tests := []struct {
		name     string
		nc       *nats.Conn
		instance string
		servers  *Servers
	}{
		{"nil connection", nil, "w1", &Servers{}},
		{"nil servers", nc, "w1", nil},
		{"instance not a token", nc, "w.1", &Servers{}},
		{"empty instance", nc, "", &Servers{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if sub, err := ServeRuntimeHeaders(tt.nc, tt.instance, tt.servers, nil); err == nil {
				sub.Unsubscribe()
				t.Error("no error")
			}
		})
	}
}
