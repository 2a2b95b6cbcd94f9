package main

import (
	"io"
	"testing"
	"time"
)

// TestDrainIOAnswered: the end of stdin waits only for requests not yet
// answered, however the client spells a request's id and whether the
// SDK answered the request before its line's newline was read.
func TestDrainIOAnswered(t *testing.T) {
	tests := []struct {
		name     string
		in       []string // the pieces stdin gives, in order
		answered int      // after this many pieces the SDK writes out
		out      string   // the SDK's response
	}{
		{"id as written", []string{`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n"}, 1, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{"a number's other spelling", []string{`{"jsonrpc":"2.0","id":7.0,"method":"ping"}` + "\n"}, 1, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{"an escaped string", []string{`{"jsonrpc":"2.0","id":"a\u0062","method":"ping"}` + "\n"}, 1, `{"jsonrpc":"2.0","id":"ab","result":{}}`},
		{"answered before the newline", []string{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, "\n"}, 1, `{"jsonrpc":"2.0","id":7,"result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w := io.Pipe()
			d := newDrainIO(r, io.Discard, 30*time.Second)
			go func() {
				for i, p := range tt.in {
					io.WriteString(w, p)
					if i+1 == tt.answered {
						// The SDK decodes a value without waiting for
						// its newline, and may answer at once.
						time.Sleep(50 * time.Millisecond)
					}
				}
				w.Close()
			}()
			rd := d.reader()
			buf := make([]byte, 4096)
			for i := 0; ; i++ {
				if i == tt.answered {
					d.writer().Write([]byte(tt.out + "\n"))
				}
				start := time.Now()
				_, err := rd.Read(buf)
				if err == io.EOF {
					if took := time.Since(start); took > 10*time.Second {
						t.Fatalf("the end of input waited %v for a request already answered", took.Round(time.Millisecond))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
