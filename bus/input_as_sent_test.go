package bus_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// TestResetToolsReadsInputAsSent: reset_tools' error texts read a decoded
// request's input as the caller sent it, as AgentScope reads the
// model's arguments: a float sent whole (msgpack's float 1.0, JSON's
// 1.0) is a <class 'float'> and an integer a <class 'int'>, and unknown
// group names are listed, and the first value that is not a bool named,
// in the order the caller wrote the keys (a Python dict's msgpack or
// JSON keeps its insertion order), where a decoded map has none.
func TestResetToolsReadsInputAsSent(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	for _, g := range []string{"alpha", "web"} {
		if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools."}); err != nil {
			t.Fatal(err)
		}
	}
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, nil)
	for _, tt := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"web": 1.0}, "Invalid arguments: the argument 'web' should be a bool value, but got <class 'float'>."},
		{map[string]any{"web": float32(2)}, "Invalid arguments: the argument 'web' should be a bool value, but got <class 'float'>."},
		{map[string]any{"web": 1}, "Invalid arguments: the argument 'web' should be a bool value, but got <class 'int'>."},
		{map[string]any{"web": 1.5}, "Invalid arguments: the argument 'web' should be a bool value, but got <class 'float'>."},
	} {
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: tt.in})
		if r.Code != toolkit.CodeInvalidInput || r.Text() != tt.want {
			t.Errorf("msgpack %v: %s %q, want %q", tt.in, r.Code, r.Text(), tt.want)
		}
	}

	// Bodies written key by key, as a client in another language writes
	// a dict: a struct's fields keep their order in msgpack.
	call := func(ct string, body []byte) *toolkit.Response {
		t.Helper()
		m, err := nc.RequestMsg(&nats.Msg{Subject: "tools.call." + toolkit.MetaToolName, Header: nats.Header{"Content-Type": {ct}}, Data: body}, guard)
		if err != nil {
			t.Fatal(err)
		}
		codec := wire.Msgpack
		if ct == wire.ContentTypeJSON {
			codec = wire.JSON
		}
		var f wire.Frame
		if err := codec.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		return f.Final
	}
	// Unknown names in the order written.
	for _, tt := range []struct{ ct, want string }{
		{wire.ContentTypeMsgpack, "Invalid group name(s): zeta, omega. The current available groups are: alpha, web"},
		{wire.ContentTypeJSON, "Invalid group name(s): zeta, omega. The current available groups are: alpha, web"},
	} {
		var body []byte
		var err error
		if tt.ct == wire.ContentTypeJSON {
			body = []byte(`{"id": "o2", "session": "s", "input": {"zeta": true, "web": true, "omega": false}}`)
		} else {
			body, err = msgpack.Marshal(struct {
				ID      string `msgpack:"id"`
				Session string `msgpack:"session"`
				Input   struct {
					Zeta  bool `msgpack:"zeta"`
					Web   bool `msgpack:"web"`
					Omega bool `msgpack:"omega"`
				} `msgpack:"input"`
			}{ID: "o2", Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
		}
		if r := call(tt.ct, body); r.Code != toolkit.CodeInvalidInput || r.Text() != tt.want {
			t.Errorf("%s: %s %q, want %q", tt.ct, r.Code, r.Text(), tt.want)
		}
	}
	// The first value that is not a bool, in the order written; a float
	// sent whole is a float in JSON too.
	for _, tt := range []struct {
		ct   string
		body func() ([]byte, error)
		want string
	}{
		{wire.ContentTypeMsgpack, func() ([]byte, error) {
			return msgpack.Marshal(struct {
				ID      string `msgpack:"id"`
				Session string `msgpack:"session"`
				Input   struct {
					Web   any `msgpack:"web"`
					Alpha any `msgpack:"alpha"`
				} `msgpack:"input"`
			}{ID: "o3", Session: "s", Input: struct {
				Web   any `msgpack:"web"`
				Alpha any `msgpack:"alpha"`
			}{Web: 1.0, Alpha: "yes"}})
		}, "the argument 'web' should be a bool value, but got <class 'float'>."},
		{wire.ContentTypeJSON, func() ([]byte, error) {
			return []byte(`{"id": "o3", "session": "s", "input": {"web": 1.0, "alpha": "yes"}}`), nil
		}, "the argument 'web' should be a bool value, but got <class 'float'>."},
		{wire.ContentTypeJSON, func() ([]byte, error) {
			return []byte(`{"id": "o3", "session": "s", "input": {"web": 1e0, "web": 2, "alpha": 1}}`), nil
		}, "the argument 'web' should be a bool value, but got <class 'int'>."},
	} {
		body, err := tt.body()
		if err != nil {
			t.Fatal(err)
		}
		if r := call(tt.ct, body); r.Code != toolkit.CodeInvalidInput || r.Text() != "Invalid arguments: "+tt.want {
			t.Errorf("%s %s: %s %q, want %q", tt.ct, body, r.Code, r.Text(), "Invalid arguments: "+tt.want)
		}
	}
}
