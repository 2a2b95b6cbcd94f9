package main

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestRefusalIDAgreesWithSDK: a request with a number id is refused,
// -32600 under the id as sent, unless it is an integer of magnitude at
// most 2^53 (as the HTTP gateway refuses it, mcp.CheckIDs), and one that
// is not refused the SDK answers under the number sent; the SDK's reading
// of a message (its key's case, a repeated key, an escaped key) is the
// one that counts.
func TestRefusalIDAgreesWithSDK(t *testing.T) {
	limit := big.NewRat(1<<53, 1)
	for _, id := range []string{
		"0", "-0", "0.0", "0e999999999999", "-0.0e-5", "7", "7.0", "7.50e1", "1E2", "1e+2", "-12", "120e-1",
		"1.5", "0.5", "-1.5", "1e-400", "1e-1", "1.25e1", "1.0000000000000000001",
		"9007199254740992", "-9007199254740992", "9007199254740993", "-9007199254740993", "1152921504606846976",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551616", "1e30", "1e19", "1e18",
		"99999999999999999999999999999999999999999999999999999999999999999999999999999999",
	} {
		line := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		exact, ok := new(big.Rat).SetString(id)
		if !ok {
			t.Fatalf("%s: not a number", id)
		}
		answerable := exact.IsInt() && new(big.Rat).Abs(exact).Cmp(limit) <= 0
		refused := refusal(line)
		switch {
		case answerable && refused != nil:
			t.Errorf("id %s refused: %s", id, refused)
		case answerable:
			msg, err := jsonrpc.DecodeMessage(line)
			if err != nil {
				t.Fatalf("id %s: %v", id, err)
			}
			if got := msg.(*jsonrpc.Request).ID.Raw(); got != exact.Num().Int64() {
				t.Errorf("id %s passed on, and the SDK answers it as %v", id, got)
			}
		default:
			var r struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int }
			}
			if json.Unmarshal(refused, &r) != nil || string(r.ID) != id || r.Error.Code != -32600 {
				t.Errorf("id %s refused as %s, want -32600 under the id as sent", id, refused)
			}
		}
	}
	for _, c := range []struct{ line, refused string }{
		{`{"jsonrpc":"2.0","Id":1.5,"method":"ping"}`, ""}, // a notification to the SDK
		{`{"jsonrpc":"2.0","id":1.5,"id":2,"method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","id":2,"id":1.5,"method":"ping"}`, "1.5"},
		{`{"jsonrpc":"2.0","\u0069d":1.5,"method":"ping"}`, "1.5"},
		{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, "null"}, // a response: id null
	} {
		refused := refusal([]byte(c.line))
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		switch {
		case c.refused == "" && refused != nil:
			t.Errorf("%s refused: %s", c.line, refused)
		case c.refused != "" && (json.Unmarshal(refused, &r) != nil || string(r.ID) != c.refused):
			t.Errorf("%s refused as %q, want under the id %s", c.line, refused, c.refused)
		}
	}
}
