package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// Request is the body of a call published on SubjectCallPrefix + tool.
type Request struct {
	// ID is the call id: required, one subject token ([A-Za-z0-9_-]+, at
	// most MaxCallIDLen bytes) because cancels are addressed by it.
	ID string `json:"id" msgpack:"id"`
	// Name is optional; when set it must equal the tool named by the
	// subject.
	Name string `json:"name,omitempty" msgpack:"name,omitempty"`
	// Input is the tool's arguments, a JSON object.
	Input map[string]any `json:"input,omitempty" msgpack:"input,omitempty"`
	// Session keys group activation; reset_tools requires one.
	Session string `json:"session,omitempty" msgpack:"session,omitempty"`
}

// MaxCallIDLen bounds the length of a call id.
const MaxCallIDLen = 128

// Frame is one reply message of a call. Exactly one of Chunk, Progress and
// Final is set, according to Kind (none for a heartbeat).
type Frame struct {
	Kind Kind   `json:"kind" msgpack:"kind"`
	ID   string `json:"id" msgpack:"id"`
	// Seq numbers the frames of one call 1, 2, 3, ... across all kinds;
	// the final has the highest.
	Seq      uint64            `json:"seq" msgpack:"seq"`
	Chunk    *toolkit.Chunk    `json:"chunk,omitempty" msgpack:"chunk,omitempty"`
	Progress *toolkit.Progress `json:"progress,omitempty" msgpack:"progress,omitempty"`
	Final    *toolkit.Response `json:"final,omitempty" msgpack:"final,omitempty"`
	// Chunks, on a final, is the number of chunk frames sent before it.
	// Zero means Final.Content is the complete result; otherwise
	// Final.Content is empty and the result is the accumulation of those
	// chunks.
	Chunks uint64 `json:"chunks,omitempty" msgpack:"chunks,omitempty"`
}

// ListRequest is the body of a SubjectList request.
type ListRequest struct {
	Session string `json:"session,omitempty" msgpack:"session,omitempty"`
}

// ListReply answers a ListRequest.
type ListReply struct {
	// Worker is the instance that answered.
	Worker string `json:"worker" msgpack:"worker"`
	// Tools names every tool the worker serves, reset_tools included when
	// it has groups, whatever the session's activation.
	Tools []string `json:"tools" msgpack:"tools"`
	// Schemas are the function schemas the session may see now.
	Schemas []toolkit.FunctionSchema `json:"schemas" msgpack:"schemas"`
	// Error is set (and the rest empty) when the state could not be read.
	Error string `json:"error,omitempty" msgpack:"error,omitempty"`
}

// codec encodes and decodes bodies in one of the two wire encodings.
type codec bool

const (
	msgpackCodec codec = false
	jsonCodec    codec = true
)

func (c codec) marshal(v any) ([]byte, error) {
	if c == jsonCodec {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	switch x := v.(type) {
	case *Frame:
		return appendFrame(nil, x, nil)
	case *Request:
		return appendRequest(nil, x)
	}
	return msgpack.Marshal(v)
}

func (c codec) unmarshal(data []byte, v any) error {
	if c == jsonCodec {
		return json.Unmarshal(data, v)
	}
	switch x := v.(type) {
	case *Frame:
		return unmarshalFrame(data, x, false)
	case *Request:
		return unmarshalRequest(data, x, false)
	}
	return refUnmarshalBody(data, v)
}

func (c codec) String() string {
	if c == jsonCodec {
		return "json"
	}
	return "msgpack"
}

// EncodeFrame encodes a frame as msgpack, or as JSON when json is true.
func EncodeFrame(f *Frame, json bool) ([]byte, error) {
	return codec(json).marshal(f)
}

// DecodeFrame decodes and checks one reply frame (msgpack, or JSON when
// json is true). It rejects a frame that is not well formed: an unknown
// kind, a zero sequence number, a payload that does not match the kind.
func DecodeFrame(data []byte, json bool) (*Frame, error) {
	return decodeFrame(data, json, false)
}

// decodeFrame is DecodeFrame; with alias set, the frame's strings share
// data's memory (for a received message's payload, which nobody changes).
func decodeFrame(data []byte, json, alias bool) (*Frame, error) {
	f := new(Frame)
	if err := decodeFrameInto(f, data, json, alias); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeFrameInto is decodeFrame into a frame of the caller's.
func decodeFrameInto(f *Frame, data []byte, json, alias bool) error {
	var err error
	if json {
		*f, err = unmarshalJSONFrame(data)
	} else {
		err = unmarshalFrame(data, f, alias)
	}
	if err != nil {
		return fmt.Errorf("bus: undecodable frame: %w", err)
	}
	return f.check()
}

// unmarshalJSONFrame decodes into a frame of its own, so that the caller's
// need not live on the heap.
func unmarshalJSONFrame(data []byte) (Frame, error) {
	var f Frame
	err := jsonCodec.unmarshal(data, &f)
	return f, err
}

func (f *Frame) check() error {
	if f.Seq == 0 {
		return errors.New("bus: frame without a sequence number")
	}
	n := 0
	for _, set := range []bool{f.Chunk != nil, f.Progress != nil, f.Final != nil} {
		if set {
			n++
		}
	}
	var ok bool
	switch f.Kind {
	case KindChunk:
		ok = f.Chunk != nil && n == 1
	case KindProgress:
		ok = f.Progress != nil && n == 1
	case KindHeartbeat:
		ok = n == 0
	case KindFinal:
		ok = f.Final != nil && n == 1
		if ok && f.Final.Code != "" && !f.Final.Code.Valid() {
			return fmt.Errorf("bus: final frame with unknown code %q", f.Final.Code)
		}
	default:
		return fmt.Errorf("bus: unknown frame kind %q", f.Kind)
	}
	if !ok {
		return fmt.Errorf("bus: %s frame with the wrong payload", f.Kind)
	}
	return nil
}

// validCallID reports whether id can address a cancel subject.
func validCallID(id string) bool {
	return len(id) <= MaxCallIDLen && validToken(id)
}

// validToken reports whether s is one subject token of [A-Za-z0-9_-].
func validToken(s string) bool { return toolkit.ValidName(s) }

// EncodeRequest encodes a call request as msgpack, or as JSON when json is
// true (then send HeaderContentType: ContentTypeJSON with it).
func EncodeRequest(r *Request, json bool) ([]byte, error) {
	return codec(json).marshal(r)
}

// DecodeRequest decodes a call request body.
func DecodeRequest(data []byte, json bool, r *Request) error {
	return codec(json).unmarshal(data, r)
}
