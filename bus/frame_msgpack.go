package bus

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/toolkit"
)

// EncodeMsgpack writes a frame with the encoder's primitives instead of
// reflection: the same bytes the struct tags produce (keys in field order,
// omitempty honoured; see TestFrameMsgpackSameBytes), without the
// per-struct field-cache lookups and the stack growth they cost on every
// frame. Decoding is unchanged.
func (f *Frame) EncodeMsgpack(e *msgpack.Encoder) error {
	n := 3
	for _, set := range []bool{f.Chunk != nil, f.Progress != nil, f.Final != nil, f.Chunks != 0} {
		if set {
			n++
		}
	}
	w := mpWriter{e: e}
	w.mapLen(n)
	w.str("kind")
	w.str(string(f.Kind))
	w.str("id")
	w.str(f.ID)
	w.str("seq")
	w.uint(f.Seq)
	if f.Chunk != nil {
		w.str("chunk")
		w.chunk(f.Chunk)
	}
	if f.Progress != nil {
		w.str("progress")
		w.progress(f.Progress)
	}
	if f.Final != nil {
		w.str("final")
		w.response(f.Final)
	}
	if f.Chunks != 0 {
		w.str("chunks")
		w.uint(f.Chunks)
	}
	return w.err
}

// mpWriter keeps the first error, so the encoders read straight through.
type mpWriter struct {
	e   *msgpack.Encoder
	err error
}

func (w *mpWriter) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *mpWriter) mapLen(n int)  { w.keep(w.e.EncodeMapLen(n)) }
func (w *mpWriter) str(s string)  { w.keep(w.e.EncodeString(s)) }
func (w *mpWriter) uint(n uint64) { w.keep(w.e.EncodeUint64(n)) }

// optStr writes key and value when the value is not empty (omitempty).
func (w *mpWriter) optStr(key, v string) {
	if v != "" {
		w.str(key)
		w.str(v)
	}
}

func count(vs ...bool) int {
	n := 0
	for _, v := range vs {
		if v {
			n++
		}
	}
	return n
}

func (w *mpWriter) chunk(c *toolkit.Chunk) {
	w.mapLen(count(len(c.Content) > 0, c.State != "", len(c.Metadata) > 0))
	if len(c.Content) > 0 {
		w.str("content")
		w.blocks(c.Content)
	}
	w.optStr("state", string(c.State))
	w.metadata(c.Metadata)
}

func (w *mpWriter) progress(p *toolkit.Progress) {
	w.mapLen(1 + count(p.Total != 0, p.Message != ""))
	w.str("progress")
	w.keep(w.e.EncodeFloat64(p.Progress))
	if p.Total != 0 {
		w.str("total")
		w.keep(w.e.EncodeFloat64(p.Total))
	}
	w.optStr("message", p.Message)
}

func (w *mpWriter) response(r *toolkit.Response) {
	w.mapLen(2 + count(r.Code != "", len(r.Content) > 0, len(r.Metadata) > 0))
	w.str("id")
	w.str(r.ID)
	w.str("state")
	w.str(string(r.State))
	w.optStr("code", string(r.Code))
	if len(r.Content) > 0 {
		w.str("content")
		w.blocks(r.Content)
	}
	w.metadata(r.Metadata)
}

func (w *mpWriter) blocks(bs []toolkit.Block) {
	w.keep(w.e.EncodeArrayLen(len(bs)))
	for i := range bs {
		b := &bs[i]
		w.mapLen(1 + count(b.ID != "", b.Text != "", b.MediaType != "", b.Data != "", b.URL != "", b.Name != ""))
		w.str("type")
		w.str(string(b.Type))
		w.optStr("id", b.ID)
		w.optStr("text", b.Text)
		w.optStr("media_type", b.MediaType)
		w.optStr("data", b.Data)
		w.optStr("url", b.URL)
		w.optStr("name", b.Name)
	}
}

func (w *mpWriter) metadata(m map[string]any) {
	if len(m) > 0 {
		w.str("metadata")
		w.keep(w.e.EncodeMap(m))
	}
}
