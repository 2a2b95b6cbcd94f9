package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzGatewayIDsAgreeWithSDK: idProblem finds a problem in a body the
// go-sdk reads exactly when the go-sdk would answer one of its messages
// under another id than the one sent, or collapse two calls of a batch
// into one; the go-sdk's own decoding is the reference. A numeric id
// beyond ±2^53 is a problem even where a float64 holds it exactly
// (9010000000000000): the gateway's rule is the range in which every
// integer is exact.
func FuzzGatewayIDsAgreeWithSDK(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0.0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":100e-2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":15E-1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e-99999999999,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":0e99999999999,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":90071992547409.93e2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e30,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9010000000000000}`,
		`{"jsonrpc":"2.0","id":-9007199254740994,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"1.5","method":"ping","params":{"id":1.5}}`,
		`{"jsonrpc":"2.0","id":2.5,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1.0,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"\u0061","method":null}]`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\ud83d\ude00\ufffd\\ud800","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\udc00\ud800","method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"result":{}}]`,
		`[{"jsonrpc":"2.0","id":null,"method":"ping"},{"jsonrpc":"2.0","id":null,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<12 || !json.Valid(body) {
			return
		}
		problem := idProblem(body)
		elems := []json.RawMessage{body}
		batch := bytes.TrimLeft(body, " \t\r\n")[0] == '['
		if batch {
			elems = nil
			if err := json.Unmarshal(body, &elems); err != nil || len(elems) == 0 {
				return
			}
		}
		calls := map[jsonrpc.ID]bool{}
		unanswerable := ""
		for _, e := range elems {
			msg, err := jsonrpc.DecodeMessage(e)
			if err != nil {
				return // the go-sdk refuses the body
			}
			var id jsonrpc.ID
			switch m := msg.(type) {
			case *jsonrpc.Request:
				id = m.ID
				if batch && m.IsCall() {
					if calls[id] && unanswerable == "" {
						unanswerable = "duplicate"
					}
					calls[id] = true
				}
			case *jsonrpc.Response:
				id = m.ID
			}
			var members map[string]json.RawMessage
			if json.Unmarshal(e, &members) != nil {
				return
			}
			sent := members["id"]
			if len(sent) > 0 && sent[0] == '"' {
				if s, _ := id.Raw().(string); unanswerable == "" && strings.Count(s, "\uFFFD") != meantFFFD(sent) {
					unanswerable = "answered as " + s
				}
				continue
			}
			if len(sent) == 0 || string(sent) == "null" {
				continue
			}
			if i := bytes.IndexAny(sent, "eE"); i >= 0 && len(bytes.TrimLeft(sent[i+1:], "+-0")) > 3 {
				return // an exponent too large for big.Rat (TestGatewayExactInt has them)
			}
			want, ok := new(big.Rat).SetString(string(sent))
			if !ok {
				t.Fatalf("%s: id %s", body, sent)
			}
			got, _ := id.Raw().(int64)
			switch {
			case unanswerable != "":
			case want.Cmp(new(big.Rat).SetInt64(got)) != 0:
				unanswerable = "answered as " + big.NewInt(got).String()
			case new(big.Rat).Abs(want).Cmp(new(big.Rat).SetInt64(maxExactID)) > 0:
				// Answered exactly, as a float64 holds it, but past
				// the bound the gateway keeps to: refused by rule.
				unanswerable = "beyond 2^53"
			}
		}
		if (problem != "") != (unanswerable != "") {
			t.Errorf("%s: idProblem %q, but the go-sdk: %q", body, problem, unanswerable)
		}
	})
}

// TestGatewayExactInt: the numeric ids the go-sdk answers under exactly,
// whatever their notation, and those it does not.
func TestGatewayExactInt(t *testing.T) {
	for _, tc := range []struct {
		lit     string
		want    int64
		problem bool
	}{
		{"0", 0, false}, {"-0", 0, false}, {"0.000", 0, false}, {"0e99999999999", 0, false}, {"-0.0E-5", 0, false},
		{"7", 7, false}, {"-7", -7, false}, {"7.0", 7, false}, {"7.000e0", 7, false}, {"700e-2", 7, false}, {"0.07e2", 7, false},
		{"1E2", 100, false}, {"1e+2", 100, false}, {"-12.5e1", -125, false},
		{"9007199254740992", 1 << 53, false}, {"-9007199254740992", -1 << 53, false}, {"9.007199254740992e15", 1 << 53, false},
		{"1.5", 0, true}, {"-1.5", 0, true}, {"15e-1", 0, true}, {"1.0000000000000000000001", 0, true}, {"1e-99999999999", 0, true},
		{"9007199254740993", 0, true}, {"-9007199254740993", 0, true}, {"9223372036854775807", 0, true}, {"9223372036854775808", 0, true},
		{"1e16", 0, true}, {"1e30", 0, true}, {"1e99999999999", 0, true}, {"100000000000000000000e-2", 0, true},
	} {
		n, problem := exactInt(tc.lit)
		if (problem != "") != tc.problem || !tc.problem && n != tc.want {
			t.Errorf("exactInt(%s) = %d, %q; want %d, problem %v", tc.lit, n, problem, tc.want, tc.problem)
		}
	}
}

// idWalkCases are bodies whose walk is easy to get wrong: escaped and
// repeated keys, ids of every kind and notation, strings that hide
// brackets, quotes and backslashes, deep values, batches small and large.
func idWalkCases() []string {
	cases := []string{
		`{"jsonrpc":"2.0","\u0069d":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","\u0069\u0064":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","\u0049D":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","Id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id\u0000":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","\/id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"\u006dethod":"ping"}`,
		`[{"id":1,"\u006dethod":"ping"},{"id":1,"method":"ping"}]`,
		`[{"id":1,"Method":"ping"},{"id":1,"method":"ping"}]`,
		`{"x":"}\"{\\","id":2.5,"method":"a"}`,
		`{"x":"\\","id":2.5}`,
		`{"x":"\\\"","id":2.5}`,
		`{"x":{"id":1.5,"y":[{"id":1.5},"]}"]},"id":3}`,
		`{"x":[[[[{"a":[]}]]]],"id":-3.25e-1}`,
		` { "id" : 1e2 , "method" : null } `,
		"\t{\n\"id\"\r:\n7.5}",
		`{"id":-0,"method":"a"}`,
		`{"id":true,"method":"a"}`,
		`{"id":1.5,"id":true,"method":"a"}`,
		`{"id":true,"id":1.5,"method":"a"}`,
		`{"id":{},"method":"a"}`,
		`{"id":{"id":1.5,"method":"a"},"method":"a"}`,
		`{"id":null}`, `{"id":1.5,"id":null}`, `{"id":null,"id":1.5}`,
		`[]`, `[1]`, `[{}]`, `[{},{}]`, `{}`, `"id"`, `1.5`, `null`,
		`[{"id":1,"method":"a"},1,{"id":1,"method":"a"}]`,
		`[{"id":1.5,"method":"a"},1]`,
		`[{"id":1,"method":"a"},{"id":true,"method":"a"},{"id":1,"method":"a"}]`,
		`[{"id":1,"method":"a"},{"id":{},"method":"a"},{"id":1,"method":"a"}]`,
		`[{"id":1,"method":"a"},{"id":1}]`,
		`[{"id":null,"method":"a"},{"id":null,"method":"a"}]`,
		`[{"id":"a","method":"a"},{"id":"\u0061","method":"a"}]`,
		`[{"id":"\u00e9","method":"a"},{"id":"é","method":"a"}]`,
		`[{"id":"\ud83d\ude00","method":"a"},{"id":"😀","method":"a"}]`,
		`[{"id":"\ud83d","method":"a"},{"id":"\ude00","method":"a"}]`,
		"[{\"id\":\"\xff\",\"method\":\"a\"},{\"id\":\"\xfe\",\"method\":\"a\"}]",
		"[{\"id\":\"\xff\",\"method\":\"a\"},{\"id\":\"\\ufffd\",\"method\":\"a\"}]",
		`[{"id":"1","method":"a"},{"id":1,"method":"a"}]`,
		`[{"id":"","method":"a"},{"id":"","method":"a"}]`,
		`[{"id":"a\"b","method":"a"},{"id":"a\u0022b","method":"a"}]`,
		`[{"id":100,"method":"a"},{"id":1e2,"method":"a"}]`,
		`[{"id":-0,"method":"a"},{"id":0.0,"method":"a"}]`,
		`[{"id":1,"method":"a"},{"id":1,"method":"a","id":2}]`,
		`[{"id":1,"method":"a"} , {"id":2,"method":"a"} ,{"id":1.5}]`,
	}
	for _, n := range []int{maxBatch - 1, maxBatch, maxBatch + 1} {
		cases = append(cases, "["+strings.Repeat(`{"method":"a"},`, n-1)+`{"method":"a"}]`)
		cases = append(cases, "["+strings.Repeat(`{"method":"a"},`, n-1)+`1]`)
		cases = append(cases, "["+strings.Repeat(`{"id":1,"method":"a"},`, n-1)+`{"method":"a"}]`)
	}
	for _, n := range []int{17, 40} { // past the array of idSet
		var calls []string
		for i := range n {
			calls = append(calls, fmt.Sprintf(`{"id":%d,"method":"a"}`, i), fmt.Sprintf(`{"id":"s%d","method":"a"}`, i))
		}
		cases = append(cases, "["+strings.Join(calls, ",")+"]")
		cases = append(cases, "["+strings.Join(calls, ",")+`,{"id":"s7","method":"a"}]`)
		cases = append(cases, "["+strings.Join(calls, ",")+`,{"id":"\u00737","method":"a"}]`)
		cases = append(cases, "["+strings.Join(calls, ",")+`,{"id":7.0,"method":"a"}]`)
	}
	return cases
}

// TestGatewayIDWalk: the scanner comes to the same decisions, with the
// same words, as the walk on encoding/json's Decoder it replaced.
func TestGatewayIDWalk(t *testing.T) {
	for _, body := range idWalkCases() {
		if !json.Valid([]byte(body)) {
			t.Fatalf("not JSON: %s", body)
		}
		if got, want := idProblem([]byte(body)), idProblemDecoder([]byte(body)); got != want {
			t.Errorf("%s: idProblem %q, the decoder's walk %q", body, got, want)
		}
	}
}

// FuzzGatewayIDWalkAgreesWithDecoder: on any JSON, the scanner comes to
// the decision of the walk on encoding/json's Decoder, in the same words,
// but where a message's id is an array: the go-sdk refuses any body with
// such an id, and the scanner stops there, where the decoder's walk went
// on into the array's objects as if they were the batch's.
func FuzzGatewayIDWalkAgreesWithDecoder(f *testing.F) {
	for _, c := range idWalkCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<12 || !json.Valid(body) {
			idProblem(body) // anything, but no panic
			return
		}
		got, want := idProblem(body), idProblemDecoder(body)
		if got == want {
			return
		}
		if got == "" && sdkRefuses(body) {
			return
		}
		t.Errorf("%s: idProblem %q, the decoder's walk %q", body, got, want)
	})
}

// sdkRefuses reports whether the go-sdk refuses body, JSON, for a message
// it cannot read.
func sdkRefuses(body []byte) bool {
	elems := []json.RawMessage{body}
	if bytes.TrimLeft(body, " \t\r\n")[0] == '[' {
		elems = nil
		if err := json.Unmarshal(body, &elems); err != nil || len(elems) == 0 {
			return true
		}
	}
	for _, e := range elems {
		if _, err := jsonrpc.DecodeMessage(e); err != nil {
			return true
		}
	}
	return false
}

// TestGatewayIDWalkAllocates: the walk of a request the gateway passes on
// allocates nothing; the decoder's walk allocated some 50 times for a
// typical tools/call.
func TestGatewayIDWalkAllocates(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"q":"a \"b\" [c]","n":[1,2.5,{"x":null}]}}}`,
		`{"jsonrpc":"2.0","id":"req-42","method":"tools/call","params":{"name":"search","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"two","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	} {
		b := []byte(body)
		if n := testing.AllocsPerRun(100, func() { idProblem(b) }); n != 0 {
			t.Errorf("%s: %v allocations, want none", body, n)
		}
	}
}

// replayBody is a request body read again from the start each time it is
// reset, so that a benchmark does not measure making one.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }

// BenchmarkCheckIDs measures the id check on the POST path: "walk" is
// idProblem alone, "check" is checkIDs reading the body and walking it,
// "read" only reads the body as checkIDs does (the floor of "check"), on a
// typical tools/call, a batch of ten, and a call with a 1 MB argument.
func BenchmarkCheckIDs(b *testing.B) {
	call := func(id int, arg string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"` + arg +
			`","filters":{"lang":["go","rust"],"since":"2024-01-01","max":1.5e3},"limit":10},"_meta":{"progressToken":"p-7"}}}`
	}
	batch := make([]string, 10)
	for i := range batch {
		batch[i] = call(i+1, "nats jetstream consumer")
	}
	for _, bc := range []struct{ name, body string }{
		{"single", call(42, "nats jetstream consumer")},
		{"batch10", "[" + strings.Join(batch, ",") + "]"},
		{"large", call(42, strings.Repeat(`lorem ipsum \"dolor\" sit amet\n`, 1<<20/32))},
	} {
		body := []byte(bc.body)
		if idProblem(body) != "" {
			b.Fatalf("%s: a problem in %.100s", bc.name, body)
		}
		b.Run(bc.name+"/walk", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				idProblem(body)
			}
		})
		rb := &replayBody{}
		r := httptest.NewRequest(http.MethodPost, "/", rb)
		r.ContentLength = int64(len(body))
		w := httptest.NewRecorder()
		b.Run(bc.name+"/check", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rb.Reset(body)
				r.Body = rb
				if !checkIDs(w, r) {
					b.Fatal("refused")
				}
			}
		})
		b.Run(bc.name+"/read", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rb.Reset(body)
				var buf bytes.Buffer
				buf.Grow(len(body) + bytes.MinRead)
				buf.ReadFrom(io.LimitReader(rb, gatewayMaxBody+1))
			}
		})
	}
}

// idProblemDecoder is idProblem as it was first written, on encoding/json's
// Decoder.Token (costly: a token boxed for each key, each skipped value
// scanned twice), kept as the reference the scanner must agree with. It
// walks the top-level JSON-RPC message, or batch of messages, in
// body and reports what makes its ids unanswerable, or "". It reads only
// each message's "id" and whether it has a "method" (the go-sdk's fields,
// case-sensitive, the last of a repeated member winning); every other
// member's value is skipped without being decoded. What is not a message
// (not JSON, an element that is no object) is no problem here: the go-sdk
// refuses it.
func idProblemDecoder(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	if tok == json.Delim('{') {
		_, _, problem := messageIDDecoder(dec)
		return problem
	}
	if tok != json.Delim('[') {
		return ""
	}
	var calls map[rpcID]bool
	for n := 1; dec.More(); n++ {
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return ""
		}
		if n > maxBatch {
			return tooLongBatch
		}
		id, call, problem := messageIDDecoder(dec)
		if problem != "" {
			return problem
		}
		if !call {
			continue
		}
		if calls == nil {
			calls = map[rpcID]bool{}
		}
		if calls[id] {
			if id.isStr {
				return fmt.Sprintf("duplicate id %q among the requests of the batch", id.s)
			}
			return fmt.Sprintf("duplicate id %d among the requests of the batch", id.n)
		}
		calls[id] = true
	}
	return ""
}

// messageID reads the members of an object whose '{' dec has just read,
// up to its '}': its id, whether it is a call (it has a method and an id
// that is not null), and the problem of its id.
func messageIDDecoder(dec *json.Decoder) (id rpcID, call bool, problem string) {
	method, hasID := false, false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return rpcID{}, false, ""
		}
		switch key {
		case "id":
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return rpcID{}, false, ""
			}
			// The last id counts, as for the go-sdk.
			problem = ""
			switch c := raw[0]; {
			case c == '-' || '0' <= c && c <= '9':
				n, p := exactInt(string(raw))
				if p != "" {
					problem = fmt.Sprintf("id %s %s", raw, p)
				}
				id, hasID = rpcID{n: n}, true
			case c == '"':
				var v string
				if json.Unmarshal(raw, &v) != nil {
					return rpcID{}, false, ""
				}
				if strings.Count(v, "\uFFFD") != meantFFFD(raw) {
					problem = fmt.Sprintf("id %q %s", raw[1:len(raw)-1], notText)
				}
				id, hasID = rpcID{s: v, isStr: true}, true
			case c == 'n':
				id, hasID = rpcID{}, false
			default: // not an id: the go-sdk refuses it
				return rpcID{}, false, ""
			}
		case "method":
			method = true
			fallthrough
		default:
			if dec.Decode(&skipValueDecoder{}) != nil {
				return rpcID{}, false, ""
			}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return rpcID{}, false, ""
	}
	return id, method && hasID, problem
}

// meantFFFD is how many U+FFFD the JSON string raw, as sent, holds: as
// UTF-8 or escaped (\ufffd). Each other one its decoding holds stands for
// what was not text.
func meantFFFD(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); {
		if raw[i] == '\\' {
			if i+6 <= len(raw) && raw[i+1] == 'u' && strings.EqualFold(string(raw[i+2:i+6]), "fffd") {
				n++
			}
			if i+1 < len(raw) && raw[i+1] == 'u' {
				i += 6
			} else {
				i += 2
			}
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 3 {
			n++
		}
		i += size
	}
	return n
}

// skipValueDecoder decodes a JSON value into nothing: the decoder scans it
// without allocating for what is in it.
type skipValueDecoder struct{}

func (skipValueDecoder) UnmarshalJSON([]byte) error { return nil }
