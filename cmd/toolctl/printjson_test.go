package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// encoding/json escapes C0 controls only: a bidi override or a C1
// control in a description or a session name reached the terminal of an
// operator reading `--json` output. printJSON escapes every character
// that is not printable, and the JSON says the same.
func TestPrintJSONEscapesWhatIsNotPrintable(t *testing.T) {
	var out bytes.Buffer
	e := &env{stdout: &out}
	v := map[string]string{"d": "safe\u202egnp.exe\u0085\u200b\x1b[2J"}
	if code := e.printJSON(v); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if strings.ContainsAny(out.String(), "\u202e\u0085\u200b\x1b") {
		t.Errorf("unprintable characters printed as they are: %q", out.String())
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["d"] != v["d"] {
		t.Errorf("the JSON read back: %q, %v", back["d"], err)
	}
}
