package main_test

import (
	"bufio"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestMCPStdioIDAnsweredAsGiven: a request is answered under the id it
// was sent with, or refused under it at once (-32600) when its id is a
// number the server would answer under another: not an integer (1.5),
// past int64 (1e30, 2^64), or an integer a 64-bit float does not hold
// (2^53+1). Nothing of such a request stays pending, so the end of stdin
// does not wait its whole drain for an answer, and no answer is counted
// as dropped. Before, 1.5 was answered as 1 and 1e30 or 2^64 as
// -9223372036854775808, the request stayed unanswered in the drain's
// eyes and the end of stdin waited out --drain, then warned of an answer
// dropped that had been written. So is a string id that is not Unicode
// text as sent, a byte that is not UTF-8 or an unpaired surrogate
// (\ud800), which the server would answer under U+FFFD in its place, as
// it answered "a\xffb" and "a\xfeb" both as "a\ufffdb" (a byte that is
// not UTF-8 is refused under id null, so that stdout stays UTF-8). An
// integer id answered as an equal
// number (-0 as 0, 7.0 as 7) is answered, and a message whose id is under
// another key's case ("Id", no id to the server) is no request to wait for.
func TestMCPStdioIDAnsweredAsGiven(t *testing.T) {
	url := startMCPFleet(t)
	for _, c := range []struct {
		line    string
		refused string // the id of the -32600 refusal, as sent
		answer  string // else the id of the answer, as written
	}{
		{line: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, refused: "1.5"},
		{line: `{"jsonrpc":"2.0","id":1e30,"method":"ping"}`, refused: "1e30"},
		{line: `{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}`, refused: "18446744073709551616"},
		{line: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, refused: "9007199254740993"},
		{line: `{"jsonrpc":"2.0","id":1e-400,"method":"ping"}`, refused: "1e-400"},
		{line: `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, answer: "0"},
		{line: `{"jsonrpc":"2.0","id":7.0,"method":"ping"}`, answer: "7"},
		{line: `{"jsonrpc":"2.0","id":"1.5","method":"ping"}`, answer: `"1.5"`},
		{line: `{"jsonrpc":"2.0","Id":8,"method":"ping"}`},
		{line: "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}", refused: "null"},
		{line: `{"jsonrpc":"2.0","id":"a\ud800b","method":"ping"}`, refused: `"a\ud800b"`},
		{line: `{"jsonrpc":"2.0","id":"\udc00","method":"ping"}`, refused: `"\udc00"`},
		{line: `{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}`, answer: `"😀"`},
	} {
		t.Run(c.line, func(t *testing.T) {
			t.Parallel()
			// The drain would wait 10 min, far past the test's wait: only
			// a request that is not left pending lets it end.
			stdout, stderr, err, exited := stdioAtEOFWith(t, url, []string{"--drain", "10m"}, mcpGuard,
				c.line,
				`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			if !exited || err != nil {
				t.Fatalf("exited %v, err %v: the end of stdin waited for an answer it had had\nstdout:\n%s\nstderr:\n%s", exited, err, stdout, stderr)
			}
			if strings.Contains(stderr, "dropped") {
				t.Errorf("warned of answers dropped:\n%s", stderr)
			}
			var refused, answered []string
			sc := bufio.NewScanner(strings.NewReader(stdout))
			for sc.Scan() {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  *struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				if json.Unmarshal(sc.Bytes(), &m) != nil {
					t.Errorf("stdout line not JSON: %s", sc.Text())
					continue
				}
				switch {
				case m.Error != nil && m.Error.Code == -32600:
					refused = append(refused, string(m.ID))
				case m.Result != nil:
					answered = append(answered, string(m.ID))
				}
			}
			want := []string{"1", "3"} // initialize and the ping after
			var wantRefused []string
			switch {
			case c.refused != "":
				wantRefused = []string{c.refused}
			case c.answer != "":
				want = []string{"1", c.answer, "3"}
			}
			// The go-sdk answers pings concurrently: their order is not
			// the order they were sent in.
			slices.Sort(answered)
			slices.Sort(want)
			if strings.Join(answered, " ") != strings.Join(want, " ") || strings.Join(refused, " ") != strings.Join(wantRefused, " ") {
				t.Errorf("answered ids %q, refused %q; want answered %q, refused %q\nstdout:\n%s", answered, refused, want, wantRefused, stdout)
			}
		})
	}
}
