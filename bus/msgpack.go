package bus

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Hand-written msgpack for the two hot types, Request and Frame. The
// reflection encoder produces the same maps (same keys, empty fields
// omitted) but spends most of its time looking up struct metadata; both
// decoders accept any integer width and skip unknown keys.

var encPool = sync.Pool{New: func() any {
	enc := msgpack.NewEncoder(nil)
	enc.UseCompactInts(true)
	return &pooledEncoder{enc: enc}
}}

type pooledEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// marshalFast encodes a *Frame or *Request; ok is false for other types.
func marshalFast(v any) (data []byte, ok bool, err error) {
	err = withEncoded(v, func(b []byte) error {
		data = bytes.Clone(b)
		return nil
	}, &ok)
	return data, ok, err
}

// withEncoded encodes a *Frame or *Request into a pooled buffer and hands
// it to use, which must not keep it (nats.Conn.Publish copies it); ok is
// false for other types.
func withEncoded(v any, use func([]byte) error, ok *bool) error {
	pe := encPool.Get().(*pooledEncoder)
	defer encPool.Put(pe)
	pe.buf.Reset()
	pe.enc.Reset(&pe.buf)
	pe.enc.UseCompactInts(true)
	var err error
	switch x := v.(type) {
	case *Frame:
		err = encodeFrame(pe.enc, x)
	case *Request:
		err = encodeRequest(pe.enc, x)
	default:
		*ok = false
		return nil
	}
	*ok = true
	if err != nil {
		return err
	}
	return use(pe.buf.Bytes())
}

func encodeRequest(e *msgpack.Encoder, r *Request) error {
	n := 1
	for _, set := range []bool{r.Name != "", len(r.Input) > 0, r.Session != ""} {
		if set {
			n++
		}
	}
	e.EncodeMapLen(n)
	e.EncodeString("id")
	e.EncodeString(r.ID)
	if r.Name != "" {
		e.EncodeString("name")
		e.EncodeString(r.Name)
	}
	if len(r.Input) > 0 {
		e.EncodeString("input")
		if err := e.EncodeMap(r.Input); err != nil {
			return err
		}
	}
	if r.Session != "" {
		e.EncodeString("session")
		return e.EncodeString(r.Session)
	}
	return nil
}

func encodeFrame(e *msgpack.Encoder, f *Frame) error {
	n := 3
	for _, set := range []bool{f.Chunk != nil, f.Progress != nil, f.Final != nil, f.Chunks != 0} {
		if set {
			n++
		}
	}
	e.EncodeMapLen(n)
	e.EncodeString("kind")
	e.EncodeString(string(f.Kind))
	e.EncodeString("id")
	e.EncodeString(f.ID)
	e.EncodeString("seq")
	e.EncodeUint(f.Seq)
	if f.Chunk != nil {
		e.EncodeString("chunk")
		if err := encodeChunk(e, f.Chunk); err != nil {
			return err
		}
	}
	if p := f.Progress; p != nil {
		e.EncodeString("progress")
		m := 1
		if p.Total != 0 {
			m++
		}
		if p.Message != "" {
			m++
		}
		e.EncodeMapLen(m)
		e.EncodeString("progress")
		e.EncodeFloat64(p.Progress)
		if p.Total != 0 {
			e.EncodeString("total")
			e.EncodeFloat64(p.Total)
		}
		if p.Message != "" {
			e.EncodeString("message")
			e.EncodeString(p.Message)
		}
	}
	if r := f.Final; r != nil {
		e.EncodeString("final")
		m := 2
		for _, set := range []bool{r.Code != "", len(r.Content) > 0, len(r.Metadata) > 0} {
			if set {
				m++
			}
		}
		e.EncodeMapLen(m)
		e.EncodeString("id")
		e.EncodeString(r.ID)
		e.EncodeString("state")
		e.EncodeString(string(r.State))
		if r.Code != "" {
			e.EncodeString("code")
			e.EncodeString(string(r.Code))
		}
		if len(r.Content) > 0 {
			e.EncodeString("content")
			encodeBlocks(e, r.Content)
		}
		if len(r.Metadata) > 0 {
			e.EncodeString("metadata")
			if err := e.EncodeMap(r.Metadata); err != nil {
				return err
			}
		}
	}
	if f.Chunks != 0 {
		e.EncodeString("chunks")
		e.EncodeUint(f.Chunks)
	}
	return nil
}

func encodeChunk(e *msgpack.Encoder, c *toolkit.Chunk) error {
	m := 0
	for _, set := range []bool{len(c.Content) > 0, c.State != "", len(c.Metadata) > 0} {
		if set {
			m++
		}
	}
	e.EncodeMapLen(m)
	if len(c.Content) > 0 {
		e.EncodeString("content")
		encodeBlocks(e, c.Content)
	}
	if c.State != "" {
		e.EncodeString("state")
		e.EncodeString(string(c.State))
	}
	if len(c.Metadata) > 0 {
		e.EncodeString("metadata")
		return e.EncodeMap(c.Metadata)
	}
	return nil
}

func encodeBlocks(e *msgpack.Encoder, blocks []toolkit.Block) {
	e.EncodeArrayLen(len(blocks))
	for i := range blocks {
		b := &blocks[i]
		fields := [...]struct{ k, v string }{
			{"id", b.ID}, {"text", b.Text}, {"media_type", b.MediaType}, {"data", b.Data}, {"url", b.URL}, {"name", b.Name},
		}
		m := 1
		for _, f := range fields {
			if f.v != "" {
				m++
			}
		}
		e.EncodeMapLen(m)
		e.EncodeString("type")
		e.EncodeString(string(b.Type))
		for _, f := range fields {
			if f.v != "" {
				e.EncodeString(f.k)
				e.EncodeString(f.v)
			}
		}
	}
}

// unmarshalFast decodes into a *Frame or *Request; ok is false for other
// types.
func unmarshalFast(d *msgpack.Decoder, v any) (ok bool, err error) {
	switch x := v.(type) {
	case *Frame:
		return true, decodeFrame(d, x)
	case *Request:
		return true, decodeRequest(d, x)
	}
	return false, nil
}

// eachKey decodes a map (nil is an empty map), calling fn per key. The key
// is only valid during the call (it is read without allocating).
func eachKey(d *msgpack.Decoder, what string, fn func(key []byte) error) error {
	n, err := d.DecodeMapLen()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var buf [32]byte
	for range max(n, 0) {
		kl, err := d.DecodeBytesLen()
		if err == nil && kl < 0 {
			err = errors.New("nil key")
		}
		if err != nil {
			return fmt.Errorf("%s key: %w", what, err)
		}
		key := buf[:0]
		if kl > len(buf) {
			key = make([]byte, kl)
		}
		key = key[:kl]
		if err := d.ReadFull(key); err != nil {
			return fmt.Errorf("%s key: %w", what, err)
		}
		if err := fn(key); err != nil {
			return fmt.Errorf("%s.%s: %w", what, key, err)
		}
	}
	return nil
}

// isNil consumes a nil if one is next.
func isNil(d *msgpack.Decoder) (bool, error) {
	c, err := d.PeekCode()
	if err != nil {
		return false, err
	}
	if c == msgpcode.Nil {
		return true, d.DecodeNil()
	}
	return false, nil
}

func decodeRequest(d *msgpack.Decoder, r *Request) error {
	return eachKey(d, "request", func(k []byte) (err error) {
		switch string(k) {
		case "id":
			r.ID, err = d.DecodeString()
		case "name":
			r.Name, err = d.DecodeString()
		case "input":
			r.Input, err = d.DecodeMap()
		case "session":
			r.Session, err = d.DecodeString()
		default:
			err = d.Skip()
		}
		return err
	})
}

func decodeFrame(d *msgpack.Decoder, f *Frame) error {
	return eachKey(d, "frame", func(k []byte) (err error) {
		var s string
		switch string(k) {
		case "kind":
			s, err = d.DecodeString()
			f.Kind = Kind(s)
		case "id":
			f.ID, err = d.DecodeString()
		case "seq":
			f.Seq, err = d.DecodeUint64()
		case "chunks":
			f.Chunks, err = d.DecodeUint64()
		case "chunk":
			var null bool
			if null, err = isNil(d); err == nil && !null {
				f.Chunk = &toolkit.Chunk{}
				err = decodeChunk(d, f.Chunk)
			}
		case "progress":
			var null bool
			if null, err = isNil(d); err == nil && !null {
				f.Progress = &toolkit.Progress{}
				err = decodeProgress(d, f.Progress)
			}
		case "final":
			var null bool
			if null, err = isNil(d); err == nil && !null {
				f.Final = &toolkit.Response{}
				err = decodeResponse(d, f.Final)
			}
		default:
			err = d.Skip()
		}
		return err
	})
}

func decodeChunk(d *msgpack.Decoder, c *toolkit.Chunk) error {
	return eachKey(d, "chunk", func(k []byte) (err error) {
		var s string
		switch string(k) {
		case "content":
			c.Content, err = decodeBlocks(d)
		case "state":
			s, err = d.DecodeString()
			c.State = toolkit.State(s)
		case "metadata":
			c.Metadata, err = d.DecodeMap()
		default:
			err = d.Skip()
		}
		return err
	})
}

func decodeProgress(d *msgpack.Decoder, p *toolkit.Progress) error {
	return eachKey(d, "progress", func(k []byte) (err error) {
		switch string(k) {
		case "progress":
			p.Progress, err = d.DecodeFloat64()
		case "total":
			p.Total, err = d.DecodeFloat64()
		case "message":
			p.Message, err = d.DecodeString()
		default:
			err = d.Skip()
		}
		return err
	})
}

func decodeResponse(d *msgpack.Decoder, r *toolkit.Response) error {
	return eachKey(d, "final", func(k []byte) (err error) {
		var s string
		switch string(k) {
		case "id":
			r.ID, err = d.DecodeString()
		case "state":
			s, err = d.DecodeString()
			r.State = toolkit.State(s)
		case "code":
			s, err = d.DecodeString()
			r.Code = toolkit.Code(s)
		case "content":
			r.Content, err = decodeBlocks(d)
		case "metadata":
			r.Metadata, err = d.DecodeMap()
		default:
			err = d.Skip()
		}
		return err
	})
}

func decodeBlocks(d *msgpack.Decoder) ([]toolkit.Block, error) {
	n, err := d.DecodeArrayLen()
	if err != nil || n <= 0 {
		return nil, err
	}
	out := make([]toolkit.Block, n)
	for i := range out {
		b := &out[i]
		err := eachKey(d, "block", func(k []byte) (err error) {
			var s string
			switch string(k) {
			case "type":
				s, err = d.DecodeString()
				b.Type = toolkit.BlockType(s)
			case "id":
				b.ID, err = d.DecodeString()
			case "text":
				b.Text, err = d.DecodeString()
			case "media_type":
				b.MediaType, err = d.DecodeString()
			case "data":
				b.Data, err = d.DecodeString()
			case "url":
				b.URL, err = d.DecodeString()
			case "name":
				b.Name, err = d.DecodeString()
			default:
				err = d.Skip()
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
