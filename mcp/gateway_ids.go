package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The JSON-RPC ids of a POST, checked before the go-sdk reads the body.
//
// The go-sdk (v1.8.0) reads a numeric id as a float64 and keeps its int64
// part (jsonrpc2.MakeID): 1.5 is answered as 1, 9007199254740993 as
// 9007199254740992, 1e30 as -9223372036854775808. And it collects the
// calls of a batch (protocol 2025-03-26 and older) in a map by id, so two
// calls with the same id (1 and 1, 1 and 1.0, "a" and "\u0061") get one
// answer and the other none. Either way a client cannot match its answers.
// The gateway refuses such a POST whole, with HTTP 400 and a JSON-RPC
// Invalid Request (-32600, id null) naming the id, rather than answer
// under an id the client did not send: a numeric id must be an integer
// (JSON-RPC 2.0: numbers SHOULD NOT contain fractional parts; 1.0 and 1e2
// are integers) of magnitude at most 2^53, the integers a float64 holds
// exactly; the calls of a batch must have distinct ids, compared as the
// go-sdk compares them. Any other body, valid or not, goes to the go-sdk
// as it came.
//
// Memory: the body is read once from the network and held for the
// request (the go-sdk then reads it whole again, from memory), unless its
// Content-Length is past the bound, when the go-sdk alone reads it (to
// answer 413); the walk
// adds the decoder's buffer, as large as the body's largest value at most,
// and the set of a batch's call ids, smaller than what the go-sdk then
// holds for them.

// gatewayMaxBody bounds a request's body: the go-sdk's bound, which the
// gateway sets explicitly so that its own read of a POST (checkIDs) holds
// no more than the go-sdk would.
const gatewayMaxBody = sdk.DefaultMaxRequestBodyBytes

// maxExactID is the largest magnitude of a numeric id the go-sdk answers
// under exactly: it reads ids as float64.
const maxExactID = 1 << 53

// checkIDs reads the body of r, a POST, (at most gatewayMaxBody and one
// byte; a longer one is left to the go-sdk's 413) and puts it back for the
// go-sdk to read. When its ids cannot be answered under (see above) it
// answers w itself and reports false. A body whose Content-Length is
// already past the bound is not read at all: the go-sdk refuses it.
func checkIDs(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > gatewayMaxBody {
		return true
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= gatewayMaxBody {
		// The server holds the body to its Content-Length; ReadFrom
		// wants MinRead free to see the end without growing.
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, gatewayMaxBody+1))
	body := buf.Bytes()
	switch {
	case err != nil:
		// The go-sdk reads what came and then the same error, and
		// answers it as it would have.
		r.Body = bodyOf{io.MultiReader(bytes.NewReader(body), errReader{err}), r.Body}
		return true
	case len(body) > gatewayMaxBody:
		r.Body = bodyOf{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return true
	}
	r.Body = bodyOf{bytes.NewReader(body), r.Body}
	problem := idProblem(body)
	if problem == "" || !json.Valid(body) { // not JSON: the go-sdk's to refuse
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(invalidRequest{JSONRPC: "2.0", Error: rpcError{Code: -32600, Message: "Invalid Request: " + problem}})
	return false
}

// invalidRequest is a JSON-RPC error answer with id null.
type invalidRequest struct {
	JSONRPC string   `json:"jsonrpc"`
	ID      *int     `json:"id"` // always null
	Error   rpcError `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// bodyOf is a request body read from Reader, closing the original.
type bodyOf struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// rpcID is an id as the go-sdk tells ids apart: a number by its int64
// value, a string by its decoded text.
type rpcID struct {
	n     int64
	s     string
	isStr bool
}

// idProblem walks the top-level JSON-RPC message, or batch of messages, in
// body and reports what makes its ids unanswerable, or "". It reads only
// each message's "id" and whether it has a "method" (the go-sdk's fields,
// case-sensitive, the last of a repeated member winning); every other
// member's value is skipped without being decoded. What is not a message
// (not JSON, an element that is no object) is no problem here: the go-sdk
// refuses it.
func idProblem(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	if tok == json.Delim('{') {
		_, _, problem := messageID(dec)
		return problem
	}
	if tok != json.Delim('[') {
		return ""
	}
	var calls map[rpcID]bool
	for dec.More() {
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return ""
		}
		id, call, problem := messageID(dec)
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
func messageID(dec *json.Decoder) (id rpcID, call bool, problem string) {
	method, hasID := false, false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return rpcID{}, false, ""
		}
		switch key {
		case "id":
			tok, err := dec.Token()
			if err != nil {
				return rpcID{}, false, ""
			}
			// The last id counts, as for the go-sdk.
			problem = ""
			switch v := tok.(type) {
			case json.Number:
				n, p := exactInt(v.String())
				if p != "" {
					problem = fmt.Sprintf("id %s %s", v, p)
				}
				id, hasID = rpcID{n: n}, true
			case string:
				id, hasID = rpcID{s: v, isStr: true}, true
			case nil:
				id, hasID = rpcID{}, false
			default: // not an id: the go-sdk refuses it
				return rpcID{}, false, ""
			}
		case "method":
			method = true
			fallthrough
		default:
			if dec.Decode(&skipValue{}) != nil {
				return rpcID{}, false, ""
			}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return rpcID{}, false, ""
	}
	return id, method && hasID, problem
}

// skipValue decodes a JSON value into nothing: the decoder scans it
// without allocating for what is in it.
type skipValue struct{}

func (skipValue) UnmarshalJSON([]byte) error { return nil }

// exactInt is the value of lit, a JSON number, when it is an integer the
// go-sdk answers under exactly (of magnitude at most maxExactID); else
// why not.
func exactInt(lit string) (int64, string) {
	const notInteger, tooLarge = "is not an integer", "is beyond ±2^53, the integers the server answers under exactly"
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil { // the usual case
		if n < -maxExactID || n > maxExactID {
			return 0, tooLarge
		}
		return n, ""
	}
	neg := strings.HasPrefix(lit, "-")
	mant, exp, hasExp := strings.Cut(strings.TrimPrefix(lit, "-"), "e")
	if !hasExp {
		mant, exp, hasExp = strings.Cut(mant, "E")
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	frac = strings.TrimRight(frac, "0")
	// lit is digits × 10^scale, digits without leading or trailing zeros.
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, "" // zero
	}
	trimmed := strings.TrimRight(digits, "0")
	scale := int64(len(digits)-len(trimmed)) - int64(len(frac))
	digits = trimmed
	if hasExp {
		e, err := strconv.ParseInt(exp, 10, 32)
		switch {
		case err != nil && strings.HasPrefix(exp, "-"):
			return 0, notInteger // tiny, and not zero
		case err != nil:
			return 0, tooLarge
		}
		scale += e
	}
	switch {
	case scale < 0:
		return 0, notInteger
	case int64(len(digits))+scale > 16: // 2^53 has 16 digits
		return 0, tooLarge
	}
	n, _ := strconv.ParseInt(digits+strings.Repeat("0", int(scale)), 10, 64)
	if n > maxExactID {
		return 0, tooLarge
	}
	if neg {
		n = -n
	}
	return n, ""
}
