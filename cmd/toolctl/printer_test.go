package main

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestPrinterBlocks: streamed text is printed as it comes, but blocks that
// are not part of it (data, the bus's "[toolbus]" notes, text the client
// added to the final, the blocks of an unstreamed final) start on a line
// of their own.
func TestPrinterBlocks(t *testing.T) {
	text := func(s string) toolkit.Block { return toolkit.Block{Type: toolkit.BlockText, Text: s} }
	data := toolkit.Block{Type: toolkit.BlockData, MediaType: "image/png", Data: "AAAA"}
	note := text("[toolbus] This session's stateful tools moved from worker w1, which is gone, to worker w2.")
	tests := []struct {
		name   string
		chunks [][]toolkit.Block
		final  []toolkit.Block
		want   string
	}{
		{"streamed pieces", [][]toolkit.Block{{text("ab")}, {text("c")}}, []toolkit.Block{text("abc")}, "abc\n"},
		{"streamed, then a note", [][]toolkit.Block{{text("abc")}, {note}}, []toolkit.Block{text("abc"), note}, "abc\n" + note.Text + "\n"},
		{"streamed, then data", [][]toolkit.Block{{text("abc")}, {data}}, []toolkit.Block{text("abc"), data}, "abc\n[data image/png, 4 base64 characters]\n"},
		{"streamed, then the client's text", [][]toolkit.Block{{text("part")}}, []toolkit.Block{text("part"), text("WorkerLostError: gone")}, "part\nWorkerLostError: gone\n"},
		{"a final of blocks", nil, []toolkit.Block{text("one"), text("two\n"), data, text("three")}, "one\ntwo\n[data image/png, 4 base64 characters]\nthree\n"},
		{"a final and a note", nil, []toolkit.Block{text("hi"), note}, "hi\n" + note.Text + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := &printer{w: &out}
			for _, c := range tt.chunks {
				p.blocks(c)
			}
			p.final(&toolkit.Response{State: toolkit.StateSuccess, Content: tt.final})
			p.end()
			if out.String() != tt.want {
				t.Errorf("printed %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// TestPrinterEscapesForTerminal: a call's output is the tool's, often an
// MCP server's; on a terminal its escapes retitled, cleared or rewrote
// the operator's screen. A printer for a terminal prints the text's
// unprintable characters but line breaks and tabs Go-escaped; to a file
// or pipe the output stays exact.
func TestPrinterEscapesForTerminal(t *testing.T) {
	in := "a\x1b]0;owned\a\tb\u202ec\r\n"
	for _, tt := range []struct {
		terminal bool
		want     string
	}{
		{false, in},
		{true, "a\\x1b]0;owned\\a\tb\\u202ec\\r\n"},
	} {
		var out strings.Builder
		p := &printer{w: &out, escape: tt.terminal}
		p.blocks([]toolkit.Block{{Type: toolkit.BlockText, Text: in}})
		p.final(&toolkit.Response{State: toolkit.StateSuccess, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: in + "[toolbus] added"}}})
		p.end()
		if want := tt.want + "[toolbus] added\n"; out.String() != want {
			t.Errorf("terminal %v: printed %q, want %q", tt.terminal, out.String(), want)
		}
	}
}
