package toolkit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool writing its output as chunk metadata, a new key each time, grew
// the call's accumulated output past MaxResultBytes: Chunk.Size counts
// the content only, and the accumulator keeps every key.
func TestOutputBoundCountsMetadata(t *testing.T) {
	const limit = 10_000
	value := strings.Repeat("m", 1000)
	tool := toolkit.Stream("meta", "Write metadata without end.", func(ctx context.Context, _ noIn, w toolkit.Writer) error {
		for i := range 1000 {
			if err := w.Write(toolkit.Chunk{Metadata: map[string]any{fmt.Sprint("k", i): value}}); err != nil {
				return err
			}
		}
		return nil
	})
	tk := toolkit.New(&toolkit.Options{MaxResultBytes: limit})
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "m", Name: "meta"})
	kept := 0
	for k, v := range r.Metadata {
		s, _ := v.(string)
		kept += len(k) + len(s)
	}
	if kept > 2*limit {
		t.Errorf("final %s/%s keeps %d bytes of metadata; the bound is %d", r.State, r.Code, kept, limit)
	}
}
