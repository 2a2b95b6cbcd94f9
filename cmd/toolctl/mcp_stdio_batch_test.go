package main_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMCPStdioBatchNotifications: under 2025-03-26, whose JSON-RPC
// batches `mcp stdio` serves, a batch's notifications are taken and its
// requests answered, in one array of their responses, whatever else the
// batch holds; the session and its calls go on. Before, the go-sdk took
// each notification of a batch for a request with no id: a batch of two
// ended the session ("duplicate message ID"), exit 1, the call in flight
// interrupted and the requests after it never read; a batch of a request
// and a notification waited for ever for the notification's answer, so
// the request's was never written; and after a batch of one
// notification, the next batch with one ended the session ("batch
// contains previously seen request").
func TestMCPStdioBatchNotifications(t *testing.T) {
	url := startMCPFleet(t)
	note := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	// The drain would wait 10 min, far past the test's wait: only an
	// answer to every request lets the end of stdin end the session.
	stdout, stderr, err, exited := stdioAtEOFVersion(t, url, "2025-03-26", []string{"--drain", "10m"}, mcpGuard,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`,
		"["+note+","+note+"]",
		"["+ping("10")+","+note+"]",
		"["+note+"]",
		"["+note+","+ping("11")+","+ping("12")+"]",
		ping("3"))
	if !exited || err != nil {
		t.Fatalf("exited %v, err %v: an answer was never written or the session ended\nstdout:\n%s\nstderr:\n%s", exited, err, stdout, stderr)
	}
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":2,"result"`,
		`[{"jsonrpc":"2.0","id":10,"result":{}}]`,
		`[{"jsonrpc":"2.0","id":11,"result":{}},{"jsonrpc":"2.0","id":12,"result":{}}]`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %s\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	for _, bad := range []string{`"error"`, `"interrupted"`} {
		if strings.Contains(stdout, bad) {
			t.Errorf("stdout has %s\nstdout:\n%s", bad, stdout)
		}
	}
	if strings.Contains(stderr, "dropped") {
		t.Errorf("warned of answers dropped:\n%s", stderr)
	}
}

// TestMCPStdioBatchBadMessageAnswered: a message of a batch that the
// server cannot read, or would answer under another id, is answered in
// the batch's array with the error a lone one gets, under its id when it
// is a request whose id can be answered under, else null, and the batch's
// other messages are served (JSON-RPC 2.0 answers each message of a batch
// on its own); a batch of such messages only is answered with their
// errors. Two requests of one id still refuse the whole batch, as their
// answers could not be told apart. Before, one such message refused the
// whole batch with one error of id null, and the client, which matches
// answers by id, waited for ever for the answers of its other requests.
func TestMCPStdioBatchBadMessageAnswered(t *testing.T) {
	url := startMCPFleet(t)
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	stdout, stderr, err, exited := stdioAtEOFVersion(t, url, "2025-03-26", []string{"--drain", "10m"}, mcpGuard,
		"["+ping("10")+`,{"jsonrpc":"1.0","id":11,"method":"ping"},`+ping("1.5")+",5]",
		"[5]",
		"["+ping("12")+","+ping("12")+"]",
		ping("3"))
	if !exited || err != nil {
		t.Fatalf("exited %v, err %v: an answer was never written or the session ended\nstdout:\n%s\nstderr:\n%s", exited, err, stdout, stderr)
	}
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var arrays [][]answer
	var lone []answer
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if strings.HasPrefix(line, "[") {
			var a []answer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("stdout line not a JSON array: %s", line)
			}
			arrays = append(arrays, a)
			continue
		}
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("stdout line not JSON: %s", line)
		}
		lone = append(lone, a)
	}
	say := func(as []answer) string {
		var s []string
		for _, a := range as {
			switch {
			case a.Error != nil:
				s = append(s, string(a.ID)+":error "+strconv.Itoa(a.Error.Code))
			case a.Result != nil:
				s = append(s, string(a.ID)+":result")
			}
		}
		return strings.Join(s, ", ")
	}
	// A batch is answered when its last request is: not in the order
	// the batches were sent.
	var got []string
	for _, a := range arrays {
		got = append(got, "["+say(a)+"]")
	}
	slices.Sort(got)
	want := []string{"[10:result, 11:error -32600, 1.5:error -32600, null:error -32600]", "[null:error -32600]"}
	if !slices.Equal(got, want) {
		t.Errorf("batches answered %q; want %q\nstdout:\n%s", got, want, stdout)
	}
	dup := false
	for _, a := range lone {
		if a.Error != nil && string(a.ID) == "null" && strings.Contains(a.Error.Message, "duplicate id 12") {
			dup = true
		}
	}
	if !dup || !strings.Contains(say(lone), "3:result") {
		t.Errorf("lone answers %q; want the batch with id 12 twice refused (null) and the ping after answered\nstdout:\n%s", say(lone), stdout)
	}
}
