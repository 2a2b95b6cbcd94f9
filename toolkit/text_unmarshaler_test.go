package toolkit_test

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A field whose type encoding/json decodes with its UnmarshalText (net.IP,
// netip.Addr: a TextUnmarshaler that is not a json.Unmarshaler) takes a
// JSON string, and jsonschema-go wrote the schema of its Go kind (an
// array of bytes, an object without properties); a big.Int decodes from
// a JSON number, and its schema was a string. The tool was registered
// and no input reached it: the string failed the schema, the value the
// schema took failed the decoder. Their schemas are now the values the
// decoder takes, in lists, pointers and nested structs too.
func TestTextUnmarshalerFieldIsString(t *testing.T) {
	type hosts struct {
		IP     net.IP        `json:"ip"`
		Addr   netip.Addr    `json:"addr"`
		Prefix *netip.Prefix `json:"prefix"`
		Peers  []netip.Addr  `json:"peers"`
		Inner  struct {
			Gateway netip.Addr `json:"gateway"`
		} `json:"inner"`
		Big big.Int `json:"big"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("hosts", "H.", func(_ context.Context, in hosts) (string, error) {
		return fmt.Sprint(in.IP, " ", in.Addr, " ", in.Prefix, " ", in.Peers, " ", in.Inner.Gateway, " ", &in.Big), nil
	}))
	s, _ := tk.Schema("hosts")
	props := s.Function.Parameters["properties"].(map[string]any)
	for name, want := range map[string]any{"ip": "string", "addr": "string", "prefix": []any{"null", "string"}, "big": "integer"} {
		if got := props[name].(map[string]any)["type"]; !reflect.DeepEqual(got, want) {
			t.Errorf("schema of %s: type %v, want %v", name, got, want)
		}
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "hosts", Input: map[string]any{
		"ip": "10.0.0.1", "addr": "10.0.0.2", "prefix": "10.0.0.0/24", "peers": []any{"10.0.0.3"},
		"inner": map[string]any{"gateway": "10.0.0.254"}, "big": 12345678901234567,
	}})
	if want := "10.0.0.1 10.0.0.2 10.0.0.0/24 [10.0.0.3] 10.0.0.254 12345678901234567"; r.State != toolkit.StateSuccess || r.Text() != want {
		t.Errorf("final = %s/%s %q, want success %q", r.State, r.Code, r.Text(), want)
	}
}

// The enum and default tags of such a field are strings, as its schema
// is: enum:"10.0.0.2,10.0.0.3" on a netip.Addr was refused at Add as "not
// a JSON value".
func TestTextUnmarshalerFieldTags(t *testing.T) {
	type in struct {
		Addr netip.Addr  `json:"addr" enum:"10.0.0.2,10.0.0.3"`
		Mask *netip.Addr `json:"mask,omitempty" enum:"255.255.255.0"`
		Via  netip.Addr  `json:"via" default:"10.0.0.1"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("route", "R.", func(_ context.Context, in in) (string, error) {
		return fmt.Sprint(in.Addr, " ", in.Via), nil
	}))
	s, _ := tk.Schema("route")
	addr := s.Function.Parameters["properties"].(map[string]any)["addr"].(map[string]any)
	if want := []any{"10.0.0.2", "10.0.0.3"}; !reflect.DeepEqual(addr["enum"], want) {
		t.Errorf("enum of addr: %#v, want %#v", addr["enum"], want)
	}
	for in, want := range map[string]string{"10.0.0.3": "success", "10.0.0.9": "error"} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "route", Input: map[string]any{"addr": in}})
		if string(r.State) != want || want == "success" && r.Text() != in+" 10.0.0.1" {
			t.Errorf("addr %s: final %s/%s %q, want %s", in, r.State, r.Code, r.Text(), want)
		}
	}
}

// target decodes itself from text ("host:port"); encoding/json gives its
// UnmarshalText a JSON string only.
type target struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

func (t *target) UnmarshalText(b []byte) error {
	host, port, ok := strings.Cut(string(b), ":")
	if !ok {
		return fmt.Errorf("want host:port, got %q", b)
	}
	t.Host = host
	_, err := fmt.Sscan(port, &t.Port)
	return err
}

// An input struct decoding itself from text (a TextUnmarshaler that is
// not a json.Unmarshaler) was registered, with the schema of its fields,
// though encoding/json decodes it from a JSON string only, never from
// the object a tool's input is: its calls ended invalid_input ("cannot
// unmarshal object"), but those the fast path decoded, whose fields it
// set without the method. It is now refused at Add, naming the way out.
func TestTextUnmarshalerInputRefused(t *testing.T) {
	tool := toolkit.Func("connect", "C.", func(_ context.Context, in target) (string, error) { return in.Host, nil })
	err := toolkit.New(nil).Add(tool)
	if err == nil || !strings.Contains(err.Error(), "decodes itself from text") || !strings.Contains(err.Error(), "UnmarshalJSON") {
		t.Errorf("Add: %v, want an error saying why and what to do", err)
	}
	if _, err := toolkit.SchemaFor[target](); err == nil {
		t.Error("SchemaFor: no error")
	}
}
