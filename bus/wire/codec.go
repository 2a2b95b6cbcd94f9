package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/valuewalk"
	"github.com/toolbus/toolbus/toolkit"
)

// Codec is one of the two body encodings. Every message on every subject
// is encoded and decoded through it: msgpack by the generated codec
// (wire_gen.go), JSON by encoding/json on the same structs' json tags.
type Codec uint8

const (
	// Msgpack is the default encoding.
	Msgpack Codec = iota
	// JSON is selected by HeaderContentType: ContentTypeJSON.
	JSON
)

// CodecOf is the encoding a message's headers select: JSON when
// HeaderContentType starts with ContentTypeJSON, msgpack otherwise. A
// request in JSON is answered in JSON.
func CodecOf(h nats.Header) Codec {
	if h != nil && strings.HasPrefix(h.Get(HeaderContentType), ContentTypeJSON) {
		return JSON
	}
	return Msgpack
}

func (c Codec) String() string {
	if c == JSON {
		return "json"
	}
	return "msgpack"
}

// Header returns the headers that announce the encoding: nil for msgpack
// (the default needs none), HeaderContentType for JSON.
func (c Codec) Header() nats.Header {
	if c == JSON {
		return nats.Header{HeaderContentType: {ContentTypeJSON}}
	}
	return nil
}

// Append appends the encoding of m to b. A frame or an answer holding
// values (metadata, a log's data, an ask's params, an answer's result)
// that its reader's decoder would refuse, nested too deep or decoding to
// more than its Budget, is an error here: sent, it would be dropped
// unread and its call taken for lost.
func (c Codec) Append(b []byte, m Message) ([]byte, error) {
	var out []byte
	var err error
	if c == JSON {
		if err := walkJSON(m); err != nil {
			return b, err
		}
		out, err = appendMessageJSON(b, m)
	} else {
		out, err = appendMessage(b, m)
	}
	if err == nil && holdsValues(m) {
		err = c.readable(out[len(b):])
	}
	return out, err
}

// holdsValues reports whether m carries values of a tool's or a caller's
// making, the only parts of a message that can make it unreadable.
func holdsValues(m Message) bool {
	switch v := m.(type) {
	case *Frame:
		if v.Final != nil && len(v.Final.Metadata) > 0 || v.Chunk != nil && len(v.Chunk.Metadata) > 0 ||
			v.Log != nil && v.Log.Data != nil || v.Ask != nil && v.Ask.Params != nil {
			return true
		}
		for i := range v.More {
			if len(v.More[i].Metadata) > 0 {
				return true
			}
		}
	case *Answer:
		return v.Result != nil
	}
	return false
}

// walkJSON walks the values m carries of a tool's or a caller's making
// (walkValue) before encoding/json writes them: it follows a value
// however deep, and writes a value met twice twice.
func walkJSON(m Message) error {
	var values []any
	switch v := m.(type) {
	case *Request:
		if v.Input != nil {
			values = append(values, v.Input)
		}
	case *Frame:
		if !holdsValues(v) {
			return nil
		}
		if v.Final != nil {
			values = append(values, v.Final.Metadata)
		}
		if v.Chunk != nil {
			values = append(values, v.Chunk.Metadata)
		}
		if v.Log != nil {
			values = append(values, v.Log.Data)
		}
		if v.Ask != nil {
			values = append(values, v.Ask.Params)
		}
		for i := range v.More {
			values = append(values, v.More[i].Metadata)
		}
	case *Answer:
		values = append(values, v.Result)
	}
	for _, v := range values {
		if err := walkValue(valuewalk.JSON, v); err != nil {
			return err
		}
	}
	return nil
}

// readable checks a body just written as its reader will before decoding
// it: nesting and what it decodes to (strings shared with the body, as
// the readers of frames and answers decode them).
func (c Codec) readable(data []byte) error {
	var err error
	if c == JSON {
		err = checkJSON(data)
	} else {
		d := decoder{b: data, shared: true, left: Budget(len(data))}
		err = d.scan()
	}
	if err != nil {
		return fmt.Errorf("its reader would refuse it: %w", err)
	}
	return nil
}

// Marshal encodes m.
func (c Codec) Marshal(m Message) ([]byte, error) { return c.Append(nil, m) }

// Unmarshal decodes one message from data, which it must fill exactly.
// Decoded strings are copies.
func (c Codec) Unmarshal(data []byte, m Message) error { return c.decode(data, m, false) }

// UnmarshalShared is Unmarshal with decoded msgpack strings sharing
// data's memory: for a received message's payload, which nobody changes
// afterwards. It saves a copy per string on the hot path.
func (c Codec) UnmarshalShared(data []byte, m Message) error { return c.decode(data, m, true) }

func (c Codec) decode(data []byte, m Message, shared bool) error {
	if c == JSON {
		if err := checkJSON(data); err != nil {
			return err
		}
		return decodeMessageJSON(data, m)
	}
	d := decoder{b: data, shared: shared, left: Budget(len(data))}
	if len(data) >= scanThreshold {
		if err := d.scan(); err != nil {
			return err
		}
		d.left = Budget(len(data)) // the scan only estimated
	}
	if err := decodeMessage(&d, m); err != nil {
		return err
	}
	if d.i != len(data) {
		return errors.New("trailing bytes after the body")
	}
	return nil
}

// AppendFrame appends the msgpack encoding of f with extra written into
// its final's metadata (replacing a key of the same name), without
// changing the response's map: how a worker adds its instance to every
// final it sends.
func AppendFrame(b []byte, f *Frame, extra *MetaEntry) ([]byte, error) {
	out, err := appendFrame(b, f, extra)
	if err == nil && holdsValues(f) {
		err = Msgpack.readable(out[len(b):])
	}
	return out, err
}

// appendJSON writes compact JSON without HTML escaping (tool output is
// text for a model, not for a browser). A value whose own MarshalJSON
// panics is an error (errPanicked).
func appendJSON(b []byte, v any) (_ []byte, err error) {
	defer errPanicked(&err)
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// errPanicked, deferred, turns a panic of a value's own encoder (a tool's
// type with a MarshalJSON or EncodeMsgpack method) into an error, so
// that its call ends internal rather than the worker. The panic's value
// is described by toolkit.PanicText: printed with %v, a map that holds
// itself overflows the stack, a crash no recover catches.
func errPanicked(err *error) {
	if v := recover(); v != nil {
		switch v.(type) {
		case tooDeep:
			*err = errEncodeTooDeep
			return
		case tooLarge:
			*err = errEncodeTooLarge
			return
		}
		*err = fmt.Errorf("wire: encoding a value panicked: %s", toolkit.PanicText(v))
	}
}

// unmarshalJSON decodes a JSON body; a request's input keeps its
// integers beyond ±2^53 exact (toolkit.ExactIntegers), as every other
// path a model's arguments take does.
func unmarshalJSON(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	if r, ok := v.(*Request); ok && r.Input != nil && toolkit.MayHoldBigIntegers(data) {
		var raw struct {
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(data, &raw) == nil {
			r.Input = toolkit.ExactIntegers(raw.Input, r.Input)
		}
	}
	return nil
}

// errNotMessage: a nil Message (every other one is generated).
var errNotMessage = errors.New("wire: not a message")

// ErrNoReplySubject is returned by Respond for a request that names no
// reply subject: there is nowhere to answer.
var ErrNoReplySubject = errors.New("the request has no reply subject")

// ErrReplyOutsideInbox is returned by Respond for a request whose reply
// subject is not under InboxPrefix: a worker never publishes where a
// request tells it to but into an inbox (a reply subject naming a KV key
// would otherwise overwrite it with the worker's permissions).
var ErrReplyOutsideInbox = errors.New("the request's reply subject is outside " + InboxPrefix + ">")

// Respond answers the request m with reply, in the encoding m asked for
// (JSON replies carry HeaderContentType). It is the one way a worker
// answers the request/reply subjects besides calls: listings, discovery,
// skills and control. It refuses a reply subject outside the inboxes
// (ErrReplyOutsideInbox).
func Respond(nc *nats.Conn, m *nats.Msg, reply Message) error {
	if m.Reply == "" {
		return ErrNoReplySubject
	}
	if !ReplyAllowed(m.Reply, "") {
		return fmt.Errorf("%w: %q", ErrReplyOutsideInbox, m.Reply)
	}
	c := CodecOf(m.Header)
	data, err := c.Marshal(reply)
	if err != nil {
		return fmt.Errorf("encoding the reply: %w", err)
	}
	return nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: c.Header(), Data: data})
}

// RespondFitting is Respond, with a reply too large for the connection
// replaced by what tooLarge says of the limit, so the asker is answered.
func RespondFitting(nc *nats.Conn, m *nats.Msg, reply Message, tooLarge func(maxPayload int64) Message) error {
	err := Respond(nc, m, reply)
	if errors.Is(err, nats.ErrMaxPayload) {
		err = Respond(nc, m, tooLarge(nc.MaxPayload()))
	}
	return err
}

// RequestID reads the call id of a request body without decoding the rest
// of it: for a worker to speak for a call before it can afford to decode
// it (a heartbeat while the call waits for input memory). "" when the
// body names none or cannot be read; the id is not checked
// (ValidCallID).
func RequestID(c Codec, data []byte) string {
	if c == JSON {
		if checkJSON(data) != nil {
			return ""
		}
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &r) != nil {
			return ""
		}
		return r.ID
	}
	d := decoder{b: data, left: Budget(len(data))}
	n, err := d.mapLen()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.rawStr(); err != nil {
			break
		}
		if string(k) == "id" {
			id, err := d.str()
			if err != nil {
				return ""
			}
			return id
		}
		d.i, err = d.scanEnd()
	}
	return ""
}
