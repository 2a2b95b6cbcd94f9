package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

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
			if len(sent) == 0 || sent[0] == '"' || string(sent) == "null" {
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
