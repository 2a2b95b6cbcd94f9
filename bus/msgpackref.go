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

// The reference codec: the msgpack library. The hand-written codec in
// msgpack.go handles the common shapes; this one encodes the values it
// does not know (structs, time.Time, named types) and decodes every body
// the fast decoder declines (extension types, odd integer widths, bad
// input), so the result, and the error for bad input, are the library's.

var encPool = sync.Pool{New: func() any {
	enc := msgpack.NewEncoder(nil)
	enc.UseCompactInts(true)
	return &pooledEncoder{enc: enc}
}}

type pooledEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// appendRef appends the library's encoding of v.
func appendRef(b []byte, v any) ([]byte, error) {
	pe := encPool.Get().(*pooledEncoder)
	defer encPool.Put(pe)
	pe.buf.Reset()
	pe.enc.Reset(&pe.buf)
	pe.enc.UseCompactInts(true)
	if err := pe.enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, pe.buf.Bytes()...), nil
}

type pooledDecoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

var decPool = sync.Pool{New: func() any { return &pooledDecoder{dec: msgpack.NewDecoder(nil)} }}

// refUnmarshalBody decodes a whole body with the library, after
// checkMsgpack.
func refUnmarshalBody(data []byte, v any) error {
	if err := checkMsgpack(data); err != nil {
		return err
	}
	pd := decPool.Get().(*pooledDecoder)
	defer decPool.Put(pd)
	r, dec := &pd.r, pd.dec
	r.Reset(data)
	dec.Reset(r)
	dec.UseLooseInterfaceDecoding(true)
	ok, err := refUnmarshal(dec, v)
	if !ok {
		err = dec.Decode(v)
	}
	if err != nil {
		return err
	}
	if r.Len() > 0 {
		return errors.New("trailing bytes after the body")
	}
	return nil
}

// refUnmarshal decodes into a *Frame or *Request with the msgpack
// library's decoder; ok is false for other types.
func refUnmarshal(d *msgpack.Decoder, v any) (ok bool, err error) {
	switch x := v.(type) {
	case *Frame:
		return true, refDecodeFrame(d, x)
	case *Request:
		return true, refDecodeRequest(d, x)
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

func refDecodeRequest(d *msgpack.Decoder, r *Request) error {
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

func refDecodeFrame(d *msgpack.Decoder, f *Frame) error {
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
				err = refDecodeChunk(d, f.Chunk)
			}
		case "progress":
			var null bool
			if null, err = isNil(d); err == nil && !null {
				f.Progress = &toolkit.Progress{}
				err = refDecodeProgress(d, f.Progress)
			}
		case "final":
			var null bool
			if null, err = isNil(d); err == nil && !null {
				f.Final = &toolkit.Response{}
				err = refDecodeResponse(d, f.Final)
			}
		default:
			err = d.Skip()
		}
		return err
	})
}

func refDecodeChunk(d *msgpack.Decoder, c *toolkit.Chunk) error {
	return eachKey(d, "chunk", func(k []byte) (err error) {
		var s string
		switch string(k) {
		case "content":
			c.Content, err = refDecodeBlocks(d)
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

func refDecodeProgress(d *msgpack.Decoder, p *toolkit.Progress) error {
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

func refDecodeResponse(d *msgpack.Decoder, r *toolkit.Response) error {
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
			r.Content, err = refDecodeBlocks(d)
		case "metadata":
			r.Metadata, err = d.DecodeMap()
		default:
			err = d.Skip()
		}
		return err
	})
}

func refDecodeBlocks(d *msgpack.Decoder) ([]toolkit.Block, error) {
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
