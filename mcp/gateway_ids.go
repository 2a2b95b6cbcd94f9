package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The JSON-RPC ids of a POST, checked before the go-sdk reads the body.
//
// The go-sdk (v1.8.0) reads a numeric id as a float64 and keeps its int64
// part (jsonrpc2.MakeID): 1.5 is answered as 1, 9007199254740993 as
// 9007199254740992, 1e30 as -9223372036854775808. It reads each byte of a
// string id that is not UTF-8, and each unpaired surrogate (\uD800), as
// U+FFFD: "a\xffb" and "a\xfeb" are both answered as "a\ufffdb". And it
// collects the calls of a batch (protocol 2025-03-26 and older) in a map
// by id, so two calls with the same id (1 and 1, 1 and 1.0, "a" and
// "\u0061") get one answer and the other none. Either way a client cannot
// match its answers. The gateway refuses such a POST whole, with HTTP 400
// and a JSON-RPC Invalid Request (-32600, id null) naming the id, rather
// than answer under an id the client did not send: a numeric id must be
// an integer (JSON-RPC 2.0: numbers SHOULD NOT contain fractional parts;
// 1.0 and 1e2 are integers) of magnitude at most 2^53, the integers a
// float64 holds exactly; a string id must be Unicode text as sent (UTF-8,
// surrogates escaped only in pairs); the calls of a batch must have
// distinct ids, compared as the go-sdk compares them. Any other body,
// valid or not, goes to the go-sdk as it came. A batch of more than maxBatch messages is refused the same
// way, naming the bound, whatever its ids.
//
// Memory: the body is read once from the network and held until the
// go-sdk has read it whole again, from memory, into a copy of its own
// (so for a moment a body is held twice: the go-sdk takes it only by
// reading it; the request, which carries its call until it ends, then
// holds the gateway's copy no longer). A body past the bound is not
// read twice: one whose Content-Length says so the go-sdk alone refuses
// (413) without reading it, and one of unknown length (chunked) the
// gateway refuses itself as soon as it has read one byte past the bound,
// as the go-sdk would. The walk, a scanner over the body, adds only the
// set of a batch's call ids, smaller than what the go-sdk then holds for
// them (and nothing at all for a batch of up to 16 calls with ids as
// sent).

// gatewayMaxBody bounds a request's body: the go-sdk's bound, which the
// gateway sets explicitly so that its own read of a POST (checkIDs) holds
// no more than the go-sdk would.
const gatewayMaxBody = sdk.DefaultMaxRequestBodyBytes

// maxBatch bounds the messages of a JSON-RPC batch (protocol 2025-03-26
// and older; see Gateway).
const maxBatch = 1024

// tooLongBatch is idProblem's answer to a batch of more than maxBatch
// messages.
var tooLongBatch = "a batch of more than " + strconv.Itoa(maxBatch) + " messages: send at most " + strconv.Itoa(maxBatch) + " in one POST"

// maxExactID is the largest magnitude of a numeric id the go-sdk answers
// under exactly: it reads ids as float64.
const maxExactID = 1 << 53

// checkIDs reads the body of r, a POST, (at most gatewayMaxBody and one
// byte) and puts it back for the go-sdk to read. When its ids cannot be
// answered under (see above) it answers w itself and reports false; so it
// does, as the go-sdk would, when the body is longer than the bound (413)
// or its read failed (400), rather than hand the go-sdk a copy of what it
// read to read again only to refuse it; a read that timed out, the body
// not sent in time (ServeListener's body timeout, or its place at
// MaxConns taken while it did not come), is answered 408. A body whose Content-Length is
// already past the bound is not read at all: the go-sdk refuses it.
func checkIDs(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > gatewayMaxBody {
		return true
	}
	held := &heldBody{orig: r.Body, limit: io.LimitedReader{R: r.Body, N: gatewayMaxBody + 1}}
	var body []byte
	var err error
	if n := r.ContentLength; n > 0 {
		// The server holds the body to its Content-Length; ReadFrom
		// wants MinRead free to see the end without growing.
		var buf bytes.Buffer
		buf.Grow(int(n) + bytes.MinRead)
		_, err = buf.ReadFrom(&held.limit)
		body = buf.Bytes()
	} else {
		// Of unknown length (chunked): io.ReadAll allocates about twice
		// what it reads, a bytes.Buffer doubling to the bound four times.
		body, err = io.ReadAll(&held.limit)
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		http.Error(w, "request body not received in time", http.StatusRequestTimeout)
		return false
	case err != nil:
		// The go-sdk's answer, which it would give after reading it all
		// again.
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return false
	case len(body) > gatewayMaxBody:
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", gatewayMaxBody), http.StatusRequestEntityTooLarge)
		return false
	}
	held.Reset(body)
	held.data = body
	r.Body = held
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

// heldBody is a request body read whole into memory and read again from
// there, closing the original; it holds the limit on the first read too,
// so that one allocation serves both. At the end of the second read it
// lets the bytes go: the request, and so its body, lives as long as the
// call it carries (minutes, for a slow tool), and the go-sdk has its own
// copy by then.
type heldBody struct {
	bytes.Reader
	limit io.LimitedReader
	orig  io.ReadCloser
	data  []byte // the bytes, until their second read ends (mayInitialize)
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		b.Reader.Reset(nil)
		b.data = nil
	}
	return n, err
}

func (b *heldBody) WriteTo(w io.Writer) (int64, error) {
	n, err := b.Reader.WriteTo(w)
	if err == nil {
		b.Reader.Reset(nil)
		b.data = nil
	}
	return n, err
}

func (b *heldBody) Close() error { return b.orig.Close() }

// rpcID is an id as the go-sdk tells ids apart: a number by its int64
// value, a string by its decoded text.
type rpcID struct {
	n     int64
	s     string
	isStr bool
}

// CheckIDs reports what makes the JSON-RPC ids of b, one message or a
// batch, such that the go-sdk would answer under ids other than the ones
// sent, as the Gateway refuses a POST for it (see Gateway): a numeric id
// that is not an integer or is beyond ±2^53, a string id that is not
// Unicode text as sent (a byte that is not UTF-8, an unpaired
// surrogate), two requests of a batch with
// one id, a batch of more than 1024 messages; nil when there is none, or
// when b is not a JSON-RPC message or batch (the go-sdk's to refuse). A
// transport that hands Serve its messages (`toolctl mcp stdio`) refuses
// such a message with it. It is safe for concurrent use.
func CheckIDs(b []byte) error {
	if !json.Valid(b) {
		return nil
	}
	if p := idProblem(b); p != "" {
		return errors.New(p)
	}
	return nil
}

// idProblem walks the top-level JSON-RPC message, or batch of messages, in
// body and reports what makes its ids unanswerable, or "". It reads only
// each message's "id" and whether it has a "method" (the go-sdk's fields,
// case-sensitive, the last of a repeated member winning; a key is
// compared unescaped, as the go-sdk reads "\u0069d" as "id"); every other
// member's value is skipped without being decoded. What is not a message
// (not JSON, an element that is no object, an id that is neither number,
// string nor null) is no problem here: the go-sdk refuses it, and the
// walk stops there.
//
// It counts a batch's messages too: a batch of more than maxBatch is a
// problem of its own (tooLongBatch), the first message past the bound
// reported whatever it holds.
//
// The walk is a scanner over body that trusts it to be JSON: on a body
// that is not, it stops or reports nonsense, never reads out of bounds,
// and checkIDs refuses nothing that is not JSON (json.Valid, once a
// problem is found). It allocates only to report a problem, to decode a
// string id of a batch that has escapes, and for a batch of more than
// len(idSet.few) calls.
func idProblem(body []byte) string {
	s := idScanner{b: body}
	s.space()
	switch s.peek() {
	case '{':
		return s.message().problem
	case '[':
		s.i++
	default:
		return ""
	}
	var calls idSet
	for n := 1; ; n++ {
		s.space()
		if s.peek() == ',' {
			s.i++
			s.space()
		}
		if s.peek() != '{' { // ']', the end, or an element that is no object
			return ""
		}
		if n > maxBatch {
			return tooLongBatch
		}
		m := s.message()
		switch {
		case m.stop:
			return ""
		case m.problem != "":
			return m.problem
		case !m.call:
			continue
		}
		if calls.add(m) {
			if m.isStr {
				return fmt.Sprintf("duplicate id %q among the requests of the batch", m.decoded())
			}
			return fmt.Sprintf("duplicate id %d among the requests of the batch", m.n)
		}
	}
}

// idScanner reads JSON from b at i.
type idScanner struct {
	b []byte
	i int
}

// scannedID is what idScanner.message reads of a message.
type scannedID struct {
	n       int64
	s       []byte // a string id's text as sent, escapes and all
	isStr   bool
	call    bool // it has a method and an id that is not null
	stop    bool // not a message the go-sdk reads: the walk ends
	problem string
}

// plain reports whether a string id's text is as sent: no escapes, and
// UTF-8.
func (m *scannedID) plain() bool {
	return bytes.IndexByte(m.s, '\\') < 0 && utf8.Valid(m.s)
}

// sameText reports whether two string ids have the same decoded text.
func (m *scannedID) sameText(o *scannedID) bool {
	if m.plain() && o.plain() {
		return bytes.Equal(m.s, o.s)
	}
	return m.decoded() == o.decoded()
}

// decoded is a string id's text as the go-sdk reads it.
func (m *scannedID) decoded() string {
	if m.plain() {
		return string(m.s)
	}
	// Escapes, or bytes that are not UTF-8 (each read as U+FFFD): rare.
	var s string
	q := make([]byte, 0, len(m.s)+2)
	q = append(append(append(q, '"'), m.s...), '"')
	if json.Unmarshal(q, &s) != nil {
		return string(m.s)
	}
	return s
}

func (s *idScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *idScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// str reads the string at i, its '"' included, and returns its text
// between the quotes as sent.
func (s *idScanner) str() ([]byte, bool) {
	start := s.i + 1
	for j := start; j <= len(s.b); {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		backslashes := 0
		for p := q - 1; p >= start && s.b[p] == '\\'; p-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			s.i = q + 1
			return s.b[start:q], true
		}
		j = q + 1
	}
	s.i = len(s.b)
	return nil, false
}

// skip passes the value at i: a string, an object or array with all in
// it, or up to the ',', '}' or ']' after any other.
func (s *idScanner) skip() bool {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if _, ok := s.str(); !ok {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return true
			}
			if depth--; depth == 0 {
				s.i++
				return true
			}
		case ',':
			if depth == 0 {
				return true
			}
		}
		s.i++
	}
	return false
}

// message reads the object at i, up to its '}': its id, whether it is a
// call, and the problem of its id.
func (s *idScanner) message() (m scannedID) {
	s.i++ // '{'
	method, hasID := false, false
	for {
		s.space()
		switch s.peek() {
		case '}':
			s.i++
			m.call = method && hasID
			return m
		case ',':
			s.i++
			s.space()
		}
		if s.peek() != '"' {
			return scannedID{stop: true}
		}
		key, _ := s.str()
		s.space()
		if s.peek() != ':' {
			return scannedID{stop: true}
		}
		s.i++
		s.space()
		switch {
		case keyIs(key, "id"):
			// The last id counts, as for the go-sdk.
			m.problem = ""
			switch c := s.peek(); {
			case c == '"':
				str, ok := s.str()
				if !ok {
					return scannedID{stop: true}
				}
				if !exactText(str) {
					m.problem = fmt.Sprintf("id %q %s", str, notText)
				}
				m.n, m.s, m.isStr, hasID = 0, str, true, true
			case c == '-' || '0' <= c && c <= '9':
				start := s.i
				for s.i < len(s.b) && strings.IndexByte("0123456789+-.eE", s.b[s.i]) >= 0 {
					s.i++
				}
				lit := s.b[start:s.i]
				n, p := exactInt(string(lit))
				if p != "" {
					m.problem = fmt.Sprintf("id %s %s", lit, p)
				}
				m.n, m.s, m.isStr, hasID = n, nil, false, true
			case c == 'n': // null
				s.i += len("null")
				m.n, m.s, m.isStr, hasID = 0, nil, false, false
			default: // not an id: the go-sdk refuses it
				return scannedID{stop: true}
			}
		case keyIs(key, "method"):
			method = true
			fallthrough
		default:
			if !s.skip() {
				return scannedID{stop: true}
			}
		}
	}
}

// notText is the problem of a string id that is not Unicode text as sent.
const notText = "is not Unicode text (a byte that is not UTF-8, or an unpaired surrogate \\uD800-\\uDFFF): the server would answer under U+FFFD in its place"

// exactText reports whether s, a JSON string's text as sent, is read as
// sent: UTF-8, with no escaped surrogate (\uD800-\uDFFF) but a high one
// followed by a low one. The go-sdk reads each byte that is not UTF-8,
// and each surrogate alone, as U+FFFD: "a\xffb" and "a\xfeb" are one id
// to it, "a\ufffdb", and a client is answered under neither.
func exactText(s []byte) bool {
	if !utf8.Valid(s) {
		return false
	}
	for i := bytes.IndexByte(s, '\\'); i >= 0 && i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++ // the escaped character
		r, ok := escapedUnit(s, i)
		switch {
		case !ok: // not a \u escape
		case 0xDC00 <= r && r <= 0xDFFF:
			return false // a low surrogate alone
		case 0xD800 <= r && r <= 0xDBFF:
			if i+6 >= len(s) || s[i+5] != '\\' {
				return false
			}
			if low, ok := escapedUnit(s, i+6); !ok || low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 10 // to the low surrogate's last digit
		default:
			i += 4
		}
	}
	return true
}

// escapedUnit is the UTF-16 unit of the escape \uXXXX whose 'u' is at
// s[i], if it is one.
func escapedUnit(s []byte, i int) (rune, bool) {
	if i+5 > len(s) || s[i] != 'u' {
		return 0, false
	}
	r, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 16)
	return rune(r), err == nil
}

// keyIs reports whether key, a member's name as sent, is want (ASCII)
// once its escapes are read: exactly, without folding case.
func keyIs(key []byte, want string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == want
	}
	n := 0
	for i := 0; i < len(key); n++ {
		c := key[i]
		i++
		if c == '\\' {
			if i == len(key) {
				return false
			}
			c = key[i]
			i++
			switch c {
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'u':
				if i+4 > len(key) {
					return false
				}
				r, err := strconv.ParseUint(string(key[i:i+4]), 16, 16)
				if err != nil || r >= utf8.RuneSelf {
					return false // not ASCII, so not want
				}
				c = byte(r)
				i += 4
			}
		}
		if n >= len(want) || want[n] != c {
			return false
		}
	}
	return n == len(want)
}

// idSet is the call ids of a batch: the first few in an array, the rest
// in a map.
type idSet struct {
	few  [16]scannedID
	nfew int
	many map[rpcID]bool
}

// add adds the id of m and reports whether it was there already.
func (set *idSet) add(m scannedID) bool {
	for _, o := range set.few[:set.nfew] {
		if o.isStr == m.isStr && o.n == m.n && (!m.isStr || o.sameText(&m)) {
			return true
		}
	}
	if set.nfew < len(set.few) && set.many == nil {
		set.few[set.nfew] = m
		set.nfew++
		return false
	}
	if set.many == nil {
		set.many = map[rpcID]bool{}
		for _, o := range set.few[:set.nfew] {
			set.many[o.key()] = true
		}
	}
	k := m.key()
	if set.many[k] {
		return true
	}
	set.many[k] = true
	return false
}

func (m *scannedID) key() rpcID {
	if m.isStr {
		return rpcID{s: m.decoded(), isStr: true}
	}
	return rpcID{n: m.n}
}

// exactInt is the value of lit, a JSON number, when it is an integer the
// go-sdk answers under exactly (of magnitude at most maxExactID); else
// why not.
func exactInt(lit string) (int64, string) {
	const notInteger, tooLarge = "is not an integer", "is beyond ±2^53, the integers the server answers under exactly"
	if isDecimal(lit) { // the usual case
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			if n < -maxExactID || n > maxExactID {
				return 0, tooLarge
			}
			return n, ""
		}
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
	n, _ := strconv.ParseInt(digits, 10, 64)
	for ; scale > 0; scale-- {
		n *= 10
	}
	if n > maxExactID {
		return 0, tooLarge
	}
	if neg {
		n = -n
	}
	return n, ""
}

// isDecimal reports whether lit is an optional '-' and digits only, so
// that strconv.ParseInt need not make an error (and allocate) to say it
// is not.
func isDecimal(lit string) bool {
	lit = strings.TrimPrefix(lit, "-")
	return lit != "" && strings.Trim(lit, "0123456789") == ""
}
