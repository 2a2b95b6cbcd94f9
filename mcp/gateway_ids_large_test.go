package mcp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// countingBody counts the bytes read from it.
type countingBody struct {
	r io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestGatewayIDCheckLeavesDeclaredTooLarge: a POST whose Content-Length is
// past the go-sdk's bound is the go-sdk's to refuse (413) from what it
// reads; the id check read it first (the bound and a byte, into a buffer
// doubling as it grew), so such a request held that memory twice over.
// It reads none of it, and the body reaches the go-sdk whole.
func TestGatewayIDCheckLeavesDeclaredTooLarge(t *testing.T) {
	body := bytes.Repeat([]byte{' '}, gatewayMaxBody+10)
	copy(body, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	cb := &countingBody{r: bytes.NewReader(body)}
	r := httptest.NewRequest(http.MethodPost, "/", cb)
	r.ContentLength = int64(len(body))
	w := httptest.NewRecorder()
	if !checkIDs(w, r) {
		t.Fatalf("refused: HTTP %d %s", w.Code, w.Body)
	}
	if cb.n != 0 {
		t.Errorf("the id check read %d bytes of a body declared %d bytes long, over the bound of %d", cb.n, len(body), gatewayMaxBody)
	}
	got, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("the go-sdk reads %d bytes (err %v), want the %d sent", len(got), err, len(body))
	}
}

// TestGatewayIDCheckAllocates: checkIDs passing a request on allocates the
// buffer it reads the body into and the body it hands the go-sdk, nothing
// more; it allocated twice besides, for the limit on its read and for a
// reader over the buffer apart from the body around it.
func TestGatewayIDCheckAllocates(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"q":"a \"b\" [c]","n":[1,2.5,{"x":null}]}}}`)
	rb := &replayBody{}
	r := httptest.NewRequest(http.MethodPost, "/", rb)
	r.ContentLength = int64(len(body))
	w := httptest.NewRecorder()
	passed := true
	n := testing.AllocsPerRun(100, func() {
		rb.Reset(body)
		r.Body = rb
		passed = passed && checkIDs(w, r)
	})
	if !passed {
		t.Fatalf("refused: HTTP %d %s", w.Code, w.Body)
	}
	// Growing a buffer allocates once, or twice in a -race build.
	grow := testing.AllocsPerRun(100, func() {
		var buf bytes.Buffer
		buf.Grow(len(body) + bytes.MinRead)
	})
	if n > grow+1 {
		t.Errorf("checkIDs allocates %v times, want %v: the body's buffer (%v) and the body handed on", n, grow+1, grow)
	}
	got, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("the go-sdk reads %q (err %v), want %q", got, err, body)
	}
	if err := r.Body.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
