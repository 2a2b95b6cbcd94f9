package wire

import (
	"bytes"
	"testing"
)

// FuzzJSONMatchesMsgpack: a JSON request or frame the JSON codec accepts
// keeps its values through the msgpack codec (encoded, decoded, encoded
// as JSON again: the same JSON), and a body the JSON codec refuses is
// refused with an error, not a panic. A body that is not a frame is also
// read as an MCPRequest (a request passed on to a mounted MCP server, or
// its cancel) and held to the same.
func FuzzJSONMatchesMsgpack(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","input":{"text":"hi","n":1,"f":1.5,"big":12345678901234567890,"neg":-3,"a":[1,"b",null,true,{"c":[]}]}}`,
		`{"id":"x","raw_input":"{\"a\":1","session":"s","key":"k","more":true}`,
		`{"id":"x","input":{"s":"\u00e9\ud83d\ude00\\\"","e":1e300,"z":-0}}`,
		`{"kind":"final","id":"x","seq":1,"final":{"id":"x","state":"success","content":[{"type":"text","text":"t"}],"metadata":{"m":[1,{"k":null}]}}}`,
		`{"kind":"chunk","id":"x","seq":2,"chunk":{"content":[{"type":"text","id":"b","text":"t"}]},"more":[{"content":[]}]}`,
		`{"kind":"log","id":"x","seq":3,"log":{"level":"info","data":{"a":1}}}`,
		`{"id":"x","input":{"a":` + string(bytes.Repeat([]byte("["), 70)) + `}}`,
		`{"server":"docs","method":"resources/read","params":{"uri":"file:///a","_meta":{"progressToken":7}},"id":"q1"}`,
		`{"server":"docs","method":"notifications/cancelled","params":{"requestId":"q1","reason":"gone"}}`,
		`{"server":"docs","method":"notifications/cancelled","params":{"requestId":1e3},"id":""}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, frame bool) {
		sameThroughMsgpack(t, data, func() Message {
			if frame {
				return new(Frame)
			}
			return new(Request)
		})
		if !frame {
			sameThroughMsgpack(t, data, func() Message { return new(MCPRequest) })
		}
	})
}

// sameThroughMsgpack: data, read by the JSON codec into a new msg, keeps
// its values through the msgpack codec; refused, it is refused with an
// error.
func sameThroughMsgpack(t *testing.T, data []byte, msg func() Message) {
	t.Helper()
	m := msg()
	if err := JSON.Unmarshal(data, m); err != nil {
		if err.Error() == "" {
			t.Fatal("an empty error")
		}
		return
	}
	want, err := JSON.Marshal(m)
	if err != nil {
		return // values the writer refuses to send (checked by Append)
	}
	packed, err := Msgpack.Marshal(m)
	if err != nil {
		t.Fatalf("a JSON message does not encode in msgpack: %v\n%s", err, want)
	}
	m2 := msg()
	if err := Msgpack.Unmarshal(packed, m2); err != nil {
		t.Fatalf("a JSON message encoded in msgpack does not decode: %v\n%s", err, want)
	}
	got, err := JSON.Marshal(m2)
	if err != nil {
		t.Fatalf("a message through msgpack does not encode in JSON: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("msgpack changed the message:\n%s\n%s", want, got)
	}
}
