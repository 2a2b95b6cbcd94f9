package toolkit_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool writing many small blocks that do not merge (data under a new
// ID each) had its call hold about ten times Options.MaxResultBytes
// before the bound stopped it: each block counted its bytes and 16,
// while the accumulator keeps a record of some 250 bytes for it (and the
// final a Block more), so 64 MiB let one call hold the best part of a
// GiB. Each block kept after the first now counts what the bus's client
// counts for one, so a bound of 1 MiB keeps at most 4097 of them.
func TestOutputBoundCountsBlocks(t *testing.T) {
	const limit = 1 << 20
	tk := newToolkit(t, &toolkit.Options{MaxResultBytes: limit})
	var writeErr error
	mustAdd(t, tk, toolkit.Raw("blocks", "B.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for i := range 1_000_000 {
			c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, MediaType: "a", Data: "AA==", ID: strconv.Itoa(i)}}}
			if writeErr = w.Write(c); writeErr != nil {
				return writeErr
			}
		}
		return nil
	}))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "blocks"})
	if !errors.Is(writeErr, toolkit.ErrOutputTooLarge) || r.Code != toolkit.CodeToolError {
		t.Fatalf("write error %v, final %s, want ErrOutputTooLarge and tool_error", writeErr, r.Code)
	}
	if n := len(r.Content) - 1; n > limit/256+1 { // the last is the error's text
		t.Errorf("the call kept %d blocks under a bound of %d bytes, want at most %d", n, limit, limit/256+1)
	}
}
