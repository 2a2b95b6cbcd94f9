package main

import (
	"io"
	"strings"
	"testing"
)

// TestDrainIOBatch: a batch reaches the SDK as its messages one per line,
// in their order; the responses to its requests, written by the SDK in
// any order, go out as one array in the order of the requests, once the
// last has come; a batch that reuses the id of a request not yet answered
// is refused (-32600, id null) and not passed on.
func TestDrainIOBatch(t *testing.T) {
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	note := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	in := ping("7") + "\n" +
		"[" + ping("1") + ", " + note + "," + ping(`"b"`) + "]\n" +
		"[" + ping("9") + "," + ping("7") + "]\n"
	var out syncBuffer
	d := newDrainIO(strings.NewReader(in), &out, 0)
	got, err := io.ReadAll(d.reader())
	if err != nil {
		t.Fatal(err)
	}
	want := ping("7") + "\n" + ping("1") + "\n" + note + "\n" + ping(`"b"`) + "\n"
	if string(got) != want {
		t.Errorf("the SDK read\n%s\nwant\n%s", got, want)
	}
	if s := out.String(); !strings.Contains(s, `"id":null,"error":{"code":-32600`) || !strings.Contains(s, "reuses the id 7") {
		t.Errorf("the batch reusing id 7 was not refused: %q", s)
	}
	refusal := out.String()
	w := d.writer()
	for _, r := range []string{`{"jsonrpc":"2.0","id":"b","result":{}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`} {
		if _, err := w.Write([]byte(r + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if s := strings.TrimPrefix(out.String(), refusal); s != `{"jsonrpc":"2.0","id":7,"result":{}}`+"\n" {
		t.Errorf("before the batch's last response, out has %q, want only the lone answer", s)
	}
	w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	if s := strings.TrimPrefix(out.String(), refusal); !strings.HasSuffix(s, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","result":{}}]`+"\n") {
		t.Errorf("out has %q, want the batch's responses as one array in the order of its requests", s)
	}
	if n, _ := d.dropped(); n != 0 {
		t.Errorf("%d requests left unanswered", n)
	}
}
