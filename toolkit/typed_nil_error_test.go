package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// lookupError is a tool's own error type, returned as a pointer.
type lookupError struct{ key string }

func (e *lookupError) Error() string { return "no such key " + e.key }

// A typed tool whose function returned its result with a nil pointer of
// its own error type as the error (var err *lookupError; return out,
// err: a non-nil error interface holding nil) ended its call internal,
// the result lost and the model told of a nil pointer dereference, as
// the Error method panicked when the toolkit read it. A nil pointer as a
// typed tool's error is now no error: the result is the call's.
func TestTypedNilErrorIsNoError(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("get", "G.", func(_ context.Context, _ noIn) (string, error) {
		var err *lookupError
		return "value", err
	}))
	mustAdd(t, tk, toolkit.Stream("list", "L.", func(_ context.Context, _ noIn, w toolkit.Writer) error {
		var err *lookupError
		if werr := w.Write(toolkit.Text("a, b")); werr != nil {
			return werr
		}
		return err
	}))
	for name, want := range map[string]string{"get": "value", "list": "a, b"} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: name})
		if r.State != toolkit.StateSuccess || r.Code != "" || r.Text() != want {
			t.Errorf("%s: final %s/%s %q, want success %q", name, r.State, r.Code, r.Text(), want)
		}
	}
	mustAdd(t, tk, toolkit.Func("miss", "M.", func(_ context.Context, _ noIn) (string, error) {
		return "", &lookupError{key: "k"}
	}))
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "miss"}); r.Code != toolkit.CodeToolError || r.Text() != "no such key k" {
		t.Errorf("a non-nil *lookupError: final %s/%s %q, want tool_error", r.State, r.Code, r.Text())
	}
}
