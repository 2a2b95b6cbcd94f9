package toolkit

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// State is the state of a chunk or of a final response.
//
// Chunks normally carry StateRunning. A response starts as StateSuccess and
// changes as chunks are accumulated: StateError is sticky, and otherwise the
// later of StateInterrupted and StateDenied wins.
type State string

const (
	StateRunning     State = "running"
	StateSuccess     State = "success"
	StateError       State = "error"
	StateInterrupted State = "interrupted"
	StateDenied      State = "denied"
)

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case StateRunning, StateSuccess, StateError, StateInterrupted, StateDenied:
		return true
	}
	return false
}

// BlockType tells a text block from a data block.
type BlockType string

const (
	BlockText BlockType = "text"
	BlockData BlockType = "data"
)

// Block is one piece of tool output: text, or data (base64 or a URL).
//
// Blocks with the same non-empty ID are merged when chunks are accumulated;
// a block with an empty ID is always a new block.
type Block struct {
	Type      BlockType `json:"type" msgpack:"type"`
	ID        string    `json:"id,omitempty" msgpack:"id,omitempty"`
	Text      string    `json:"text,omitempty" msgpack:"text,omitempty"`
	MediaType string    `json:"media_type,omitempty" msgpack:"media_type,omitempty"`
	Data      string    `json:"data,omitempty" msgpack:"data,omitempty"` // base64
	URL       string    `json:"url,omitempty" msgpack:"url,omitempty"`
	Name      string    `json:"name,omitempty" msgpack:"name,omitempty"`
}

// Chunk is a delta of a tool's output. Tools write chunks; the toolkit
// forwards each one to the caller and accumulates them into the final
// Response.
type Chunk struct {
	Content  []Block        `json:"content,omitempty" msgpack:"content,omitempty"`
	State    State          `json:"state,omitempty" msgpack:"state,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}

// Size is about how many bytes the chunk's content holds: the text, data,
// URL, id, name and media type of each block, and a little for the block
// itself. Options.MaxResultBytes bounds a call's output by it.
func (c *Chunk) Size() int {
	n := 0
	for i := range c.Content {
		n += c.Content[i].Size()
	}
	return n
}

// MetaSize is about how many bytes the chunk's metadata holds: keys and
// what a map keeps for each entry (metaEntryHeld), strings and bytes,
// nested maps and lists of them, a little for each other value. Options.MaxResultBytes bounds a call's output by it and
// Size.
func (c *Chunk) MetaSize() int {
	n := 0
	for k, v := range c.Metadata {
		n += metaEntrySize(k, v)
	}
	return n
}

func metaEntrySize(k string, v any) int {
	budget := maxMetaNodes
	return len(k) + metaEntryHeld + valueSize(v, &budget, 0)
}

// metaEntryHeld is about what a map keeps for an entry beyond its key's
// bytes and its value: the entry's slot (a string header and an
// interface), the key's own allocation, the map's room to grow. A flood
// of small keys costs its holder far more than their bytes.
const metaEntryHeld = 64

// maxMetaNodes and maxMetaDepth bound the values valueSize looks at in
// one entry: a value that holds itself (a Go tool's map, say) is not
// walked for ever, nor deeper than a body may nest (64). A value past
// them counts 16 bytes, whatever it holds, so the budget is far more
// values than a frame holds: an entry that spends it counts 64 MiB at
// least (16 each), the default bound of a call's output.
const (
	maxMetaNodes = 1 << 22
	maxMetaDepth = 64
)

// valueSize is about how many bytes v holds (MetaSize); depth is how
// deep v is in its entry.
func valueSize(v any, budget *int, depth int) int {
	if *budget--; *budget < 0 || depth > maxMetaDepth {
		return 16
	}
	switch x := v.(type) {
	case string:
		return len(x) + 16
	case []byte:
		return len(x) + 16
	case []string:
		n := 16
		for _, s := range x {
			n += len(s) + 16
		}
		return n
	case map[string]string:
		n := 16
		for k, s := range x {
			n += len(k) + metaEntryHeld + len(s)
		}
		return n
	case []any:
		n := 16
		for _, e := range x {
			n += valueSize(e, budget, depth+1)
		}
		return n
	case map[string]any:
		n := 16
		for k, e := range x {
			n += len(k) + metaEntryHeld + valueSize(e, budget, depth+1)
		}
		return n
	}
	return 16
}

// copyMeta copies a metadata value's maps and slices of the kinds JSON
// decodes to (and []string, map[string]string), as deep as valueSize
// walks: deeper (a value that holds itself) the rest is shared. Other
// values are kept as they are. Accumulator.Add copies only a value
// whose walk stayed within its budget of nodes, so a copy never holds
// more than the value itself.
func copyMeta(v any, budget *int, depth int) any {
	if *budget--; *budget < 0 || depth > maxMetaDepth {
		return v
	}
	switch x := v.(type) {
	case []string:
		return slices.Clone(x)
	case map[string]string:
		return maps.Clone(x)
	case []any:
		if x == nil {
			return x
		}
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = copyMeta(e, budget, depth+1)
		}
		return c
	case map[string]any:
		if x == nil {
			return x
		}
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = copyMeta(e, budget, depth+1)
		}
		return c
	}
	return v
}

// Size is about how many bytes the block holds (Chunk.Size), also about
// its encoded size.
func (b *Block) Size() int {
	return len(b.Text) + len(b.Data) + len(b.URL) + len(b.ID) + len(b.Name) + len(b.MediaType) + 16
}

// Text returns a running chunk holding one text block.
func Text(s string) Chunk {
	return Chunk{Content: []Block{{Type: BlockText, Text: s}}, State: StateRunning}
}

// Data returns a running chunk holding one base64 data block.
func Data(mediaType string, b []byte) Chunk {
	return Chunk{Content: []Block{{Type: BlockData, MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(b)}}, State: StateRunning}
}

// Progress is a UI-only progress report. It is delivered to the caller in
// order with the chunks but is never part of the result.
type Progress struct {
	Progress float64 `json:"progress" msgpack:"progress"`
	Total    float64 `json:"total,omitempty" msgpack:"total,omitempty"`
	Message  string  `json:"message,omitempty" msgpack:"message,omitempty"`
}

// Response is the final, accumulated result of one call. Its ID is the call
// ID. Exactly one Response ends every call, on every path: success, tool
// error, panic, validation failure, interrupt, timeout, denial.
//
// A Response is a result for the model, not a Go error: State and Code say
// what happened and Content says it in words the model can act on.
type Response struct {
	ID       string         `json:"id" msgpack:"id"`
	State    State          `json:"state" msgpack:"state"`
	Code     Code           `json:"code,omitempty" msgpack:"code,omitempty"`
	Content  []Block        `json:"content,omitempty" msgpack:"content,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}

// Text returns the concatenation of the response's text blocks.
func (r *Response) Text() string {
	if len(r.Content) == 1 && r.Content[0].Type == BlockText {
		return r.Content[0].Text // nothing to join
	}
	var b strings.Builder
	for _, blk := range r.Content {
		if blk.Type == BlockText {
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

// Err returns nil for a successful response and an *Error carrying the
// response's code and text otherwise.
func (r *Response) Err() error {
	if r.State == StateSuccess || r.State == "" {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Text()}
}

// Event is one item of a call's stream: exactly one of Chunk, Progress, Log
// or Final is set. Final is always the last event.
type Event struct {
	Chunk    *Chunk
	Progress *Progress
	// Log is a log message the tool sent its caller (toolkit.Log).
	Log   *LogMessage
	Final *Response
}

// Accumulator folds chunks into a Response exactly as AgentScope 2.x
// ToolResponse.append_chunk does:
//
//   - a block whose ID is already present is merged into it: text is
//     concatenated; base64 data is decoded, concatenated as bytes and
//     re-encoded (falling back to string concatenation if either side is not
//     valid base64), the newest name and media type win; URL data cannot be
//     merged (an error); a block of another type with the same ID is appended
//     under a new ID;
//   - a block with a new (or empty) ID is appended;
//   - consecutive text blocks are merged into the first, which keeps its ID;
//   - StateError is sticky; otherwise a later StateInterrupted or StateDenied
//     wins; running and success chunks leave the state alone;
//   - metadata is merged key by key, last write wins. The values are
//     copied (the maps and slices JSON gives, as deep as MetaSize looks;
//     a value past its bounds of nodes is kept as it is), so neither the
//     writer nor a reader of the chunk changes them after.
//
// Text and data are kept in growable buffers, so accumulating n chunks costs
// O(total size), not O(n²). The zero Accumulator is ready to use. It is not
// safe for concurrent use.
type Accumulator struct {
	blocks   []accBlock
	state    State
	metadata map[string]any
	many     *accMany // what only many blocks, or renames, need
	size     int      // the Chunk.Size of the chunks added
	meta     int      // the MetaSize of metadata
}

// accMany is the part of an Accumulator that calls with many blocks, or
// with blocks renamed, need; the others do not carry it.
type accMany struct {
	// byID indexes blocks by ID once there are more than indexFrom of
	// them (below, a scan is cheaper than a map). An ID is unique among
	// the blocks, so folding a block with an ID costs O(1), not a scan
	// of all the blocks before it.
	byID    map[string]int
	renamed int
}

type accBlock struct {
	Block
	// Text content is Block.Text while it is one piece, then the pieces
	// (strings are immutable, so keeping them copies nothing) until
	// Response joins them.
	pieces []string
	n      int    // total length of the pieces
	buf    []byte // data content: the decoded bytes
	// raw, when set: data is text that is not base64 (invalid base64
	// seen), the encoding of buf followed by raw.text.
	raw *rawText
}

// rawText is the tail of a data block's text that is not base64. b64
// follows the whole text as a decoder reads it, so a merge knows whether
// it decodes without decoding it.
type rawText struct {
	text []byte
	b64  b64state
}

// Size is about how many bytes the accumulator holds: the Chunk.Size of
// the chunks added and the MetaSize of the metadata it keeps (a key
// written again counts once).
func (a *Accumulator) Size() int { return a.size + a.meta }

// HeldWith is about how many bytes the accumulator holds once c is added,
// for a bound on a call's output: Size and c's Chunk.Size and MetaSize,
// and keptPerBlock for each block past the first, which Size does not
// count (blocks that do not merge, data under a new ID each, would
// otherwise hold ten times the bound). Blocks that merge into one (text
// after text) are counted once each as they come: an upper bound.
func (a *Accumulator) HeldWith(c *Chunk) int {
	return a.Size() + keptPerBlock*max(a.Len()+len(c.Content)-1, 0) + c.Size() + c.MetaSize()
}

// keptPerBlock is about what an accumulator keeps for a block beyond the
// bytes its Size counts: the block's own record, the growth of the list,
// an index entry.
const keptPerBlock = 256

// Add folds one chunk in. It returns an error only for a merge AgentScope
// also rejects (data with a URL source under an existing ID); the rest of
// the chunk is still applied.
func (a *Accumulator) Add(c *Chunk) error {
	a.size += c.Size()
	from := len(a.blocks)
	var err error
	for i := range c.Content {
		if e := a.addBlock(&c.Content[i]); e != nil && err == nil {
			err = e
		}
	}
	a.state = MergeState(a.state, c.State)
	if len(c.Metadata) > 0 {
		if a.metadata == nil {
			a.metadata = make(map[string]any, len(c.Metadata))
		}
		for k, v := range c.Metadata {
			if old, ok := a.metadata[k]; ok {
				a.meta -= metaEntrySize(k, old)
			}
			budget := maxMetaNodes
			a.meta += len(k) + metaEntryHeld + valueSize(v, &budget, 0)
			if budget >= 0 { // not one past the walk's bounds: copied
				budget = maxMetaNodes
				v = copyMeta(v, &budget, 0)
			}
			a.metadata[k] = v
		}
	}
	a.mergeAdjacentText(max(from-1, 0))
	return err
}

// index returns byID, or nil while the blocks are not indexed.
func (a *Accumulator) index() map[string]int {
	if a.many == nil {
		return nil
	}
	return a.many.byID
}

// indexFrom is the number of blocks from which byID indexes them.
const indexFrom = 16

// find returns the index of the block with the non-empty ID id, or -1.
func (a *Accumulator) find(id string) int {
	if byID := a.index(); byID != nil {
		if i, ok := byID[id]; ok {
			return i
		}
		return -1
	}
	for i := range a.blocks {
		if a.blocks[i].ID == id {
			return i
		}
	}
	return -1
}

func (a *Accumulator) addBlock(b *Block) error {
	if b.ID != "" {
		if i := a.find(b.ID); i >= 0 {
			old := &a.blocks[i]
			switch {
			case old.Type == BlockText && b.Type == BlockText:
				old.appendText(b.Text)
				return nil
			case old.Type == BlockData && b.Type == BlockData:
				if old.URL != "" || b.URL != "" {
					return fmt.Errorf("cannot append a data block with a URL source to block %q", b.ID)
				}
				old.mergeData(b.Data)
				if b.Name != "" {
					old.Name = b.Name
				}
				if b.MediaType != "" {
					old.MediaType = b.MediaType
				}
				return nil
			default:
				nb := *b
				for taken := true; taken; {
					if a.many == nil {
						a.many = &accMany{}
					}
					a.many.renamed++
					nb.ID = fmt.Sprintf("%s-%d", b.ID, a.many.renamed)
					taken = a.find(nb.ID) >= 0
				}
				a.appendBlock(&nb)
				return nil
			}
		}
	}
	a.appendBlock(b)
	return nil
}

func (a *Accumulator) appendBlock(b *Block) {
	if n := len(a.blocks); n > 0 && b.Type == BlockText && b.ID == "" {
		if last := &a.blocks[n-1]; last.Type == BlockText && last.ID == "" {
			// It would be merged into last after the chunk; since neither
			// has an id, no later block of the chunk can tell the
			// difference.
			last.appendText(b.Text)
			return
		}
	}
	nb := accBlock{Block: *b}
	if b.Type == BlockData && b.URL == "" {
		if raw, err := base64.StdEncoding.DecodeString(b.Data); err == nil {
			nb.buf = raw
		} else {
			nb.raw = &rawText{text: []byte(b.Data)}
			nb.raw.b64.feed(b.Data)
		}
		nb.Data = ""
	}
	a.blocks = append(a.blocks, nb)
	switch n := len(a.blocks); {
	case a.index() != nil:
		if nb.ID != "" {
			a.many.byID[nb.ID] = n - 1
		}
	case n > indexFrom:
		if a.many == nil {
			a.many = &accMany{}
		}
		a.many.byID = make(map[string]int, n)
		for i := range a.blocks {
			if id := a.blocks[i].ID; id != "" {
				a.many.byID[id] = i
			}
		}
	}
}

// mergeAdjacentText merges consecutive text blocks into the first, which
// keeps its ID, after a chunk. Blocks before from were merged after the
// previous chunks and a chunk only appends blocks (or merges into blocks
// by ID), so only the tail can hold new neighbours.
func (a *Accumulator) mergeAdjacentText(from int) {
	if len(a.blocks)-from < 2 {
		return
	}
	byID := a.index()
	out := a.blocks[:from+1]
	for i := from + 1; i < len(a.blocks); i++ {
		b := &a.blocks[i]
		last := &out[len(out)-1]
		if last.Type == BlockText && b.Type == BlockText {
			if byID != nil && b.ID != "" {
				delete(byID, b.ID) // merged away: its ID is gone
			}
			if b.pieces == nil {
				last.appendText(b.Text)
			} else {
				for _, p := range b.pieces {
					last.appendText(p)
				}
			}
			continue
		}
		out = append(out, *b)
		if byID != nil && b.ID != "" {
			byID[b.ID] = len(out) - 1
		}
	}
	clear(a.blocks[len(out):])
	a.blocks = out
}

// appendText appends to a text block.
func (ab *accBlock) appendText(s string) {
	switch {
	case s == "":
	case ab.pieces == nil && ab.Text == "":
		ab.Text = s
	case ab.pieces == nil:
		ab.pieces = append(make([]string, 0, 8), ab.Text, s)
		ab.n = len(ab.Text) + len(s)
		ab.Text = ""
	default:
		ab.pieces = append(ab.pieces, s)
		ab.n += len(s)
	}
}

// text returns a text block's content, joining its pieces into one.
func (ab *accBlock) text() string {
	if ab.pieces == nil {
		return ab.Text
	}
	if len(ab.pieces) > 1 {
		var b strings.Builder
		b.Grow(ab.n)
		for _, p := range ab.pieces {
			b.WriteString(p)
		}
		clear(ab.pieces)
		ab.pieces = append(ab.pieces[:0], b.String())
	}
	return ab.pieces[0]
}

func (ab *accBlock) mergeData(data string) {
	if ab.raw == nil {
		if raw, err := base64.StdEncoding.DecodeString(data); err == nil {
			ab.buf = append(ab.buf, raw...)
			return
		}
		// Fall back to string concatenation of the encoded forms. The
		// encoding of buf is not built: it is a whole number of quanta,
		// or ends padded and nothing after it decodes again.
		ab.raw = &rawText{text: []byte(data), b64: b64state{end: len(ab.buf)%3 != 0}}
		ab.raw.b64.feed(data)
		return
	}
	// AgentScope decodes the accumulated text on every merge, so
	// concatenated pieces that have become valid base64 merge by bytes
	// again. The text decodes when b64 says so; the encoding of buf in
	// front of the tail then ends a quantum, so it decodes to buf and the
	// tail's bytes. Decoding the tail drops it: each byte is decoded once.
	var inc b64state
	if inc.feed(data); ab.raw.b64.valid() && inc.valid() {
		tail, err1 := base64.StdEncoding.DecodeString(string(ab.raw.text))
		more, err2 := base64.StdEncoding.DecodeString(data)
		if err1 == nil && err2 == nil {
			ab.buf = append(append(ab.buf, tail...), more...)
			ab.raw = nil
			return
		}
	}
	ab.raw.text = append(ab.raw.text, data...)
	ab.raw.b64.feed(data)
}

// b64state follows a text, piece by piece, as
// base64.StdEncoding.DecodeString reads it: whether what was fed so far
// decodes, without decoding it again (differential test: TestB64State).
type b64state struct {
	n   uint8 // significant characters into the current quantum
	pad bool  // the first '=' of "xx==" seen, the second due
	end bool  // a padded quantum ended: only newlines may follow
	bad bool  // nothing that follows makes it decode
}

func (s *b64state) feed(p string) {
	for i := 0; i < len(p) && !s.bad; i++ {
		switch c := p[i]; {
		case c == '\n' || c == '\r': // the decoder skips them anywhere
		case s.end:
			s.bad = true
		case c == '=':
			switch {
			case s.n == 3 || s.n == 2 && s.pad:
				s.n, s.pad, s.end = 0, false, true
			case s.n == 2:
				s.pad = true
			default:
				s.bad = true
			}
		case s.pad || !b64Char(c):
			s.bad = true
		default:
			s.n = (s.n + 1) % 4
		}
	}
}

func (s *b64state) valid() bool { return !s.bad && s.n == 0 && !s.pad }

func b64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/'
}

// State returns the accumulated state: StateSuccess unless a chunk said
// otherwise.
func (a *Accumulator) State() State {
	if a.state == "" {
		return StateSuccess
	}
	return a.state
}

// Response builds the accumulated response with the given ID. The
// Accumulator stays usable.
func (a *Accumulator) Response(id string) *Response {
	var r *Response
	switch len(a.blocks) {
	case 0:
		r = &Response{}
	case 1: // the response and its one block in one allocation
		rb := &struct {
			r Response
			b [1]Block
		}{}
		r = &rb.r
		r.Content = rb.b[:]
	default:
		r = &Response{Content: make([]Block, len(a.blocks))}
	}
	r.ID, r.State = id, a.State()
	if len(a.blocks) > 0 {
		for i := range a.blocks {
			b := &a.blocks[i]
			blk := b.Block
			switch {
			case b.Type == BlockText:
				blk.Text = b.text()
			case b.Type == BlockData && b.URL == "" && b.raw != nil:
				blk.Data = base64.StdEncoding.EncodeToString(b.buf) + string(b.raw.text)
			case b.Type == BlockData && b.URL == "":
				blk.Data = base64.StdEncoding.EncodeToString(b.buf)
			}
			r.Content[i] = blk
		}
	}
	if len(a.metadata) > 0 {
		r.Metadata = maps.Clone(a.metadata)
	}
	return r
}

// ResponseWithoutContent is Response without the content: the state and
// metadata of what was accumulated, for a consumer that has the content.
func (a *Accumulator) ResponseWithoutContent(id string) *Response {
	r := &Response{ID: id, State: a.State()}
	if len(a.metadata) > 0 {
		r.Metadata = maps.Clone(a.metadata)
	}
	return r
}

// Len reports the number of accumulated blocks.
func (a *Accumulator) Len() int { return len(a.blocks) }
