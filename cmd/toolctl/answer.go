package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/tty"
	"github.com/toolbus/toolbus/toolkit"
)

// toolctl call answers a tool's requests for input (toolkit.Ask with
// elicitation/create) on the terminal: it prints the tool's message and
// asks for each field of the requested schema on stderr, reads the answers
// from stdin, and sends them (accept). An empty answer to a required field
// declines; end of input cancels. It answers when stdin is a terminal the
// call's input is not read from, or with --answer; otherwise the tool
// hears that this caller cannot answer, and stderr says --answer would.
// Sampling requests are refused.

// terminal reports whether v (stdin, stdout) is a terminal: not just a
// character device, which /dev/null (cron's and CI's stdin) and /dev/zero
// are too.
func terminal(v any) bool {
	if o, ok := v.(*outWriter); ok {
		v = o.w
	}
	f, ok := v.(*os.File)
	return ok && tty.Is(f)
}

// maxAnswerBytes bounds one answer line: stdin without newlines (/dev/zero
// given with --answer) must not fill memory.
const maxAnswerBytes = 1 << 20

// readAnswer reads one line of at most maxAnswerBytes, its newline
// included.
func readAnswer(r *bufio.Reader) (string, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxAnswerBytes {
			return "", fmt.Errorf("an answer is over %d bytes: answer on one line", maxAnswerBytes)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return string(line), err
		}
	}
}

// unansweredAsker refuses a tool's requests as a caller without an Asker
// does, and tells out, once, why the tool got no answer and how to give
// one: a tool that fails on it says only that the caller could not answer.
// stdinInput is whether the call's input was read from stdin, which then
// holds no answers.
func unansweredAsker(out io.Writer, stdinInput bool) bus.Asker {
	hint := "toolctl: the tool asked for input, which toolctl asks at a terminal: give --answer to answer it from stdin"
	if stdinInput {
		hint = "toolctl: the tool asked for input, which toolctl reads from stdin, but stdin held the call's input: give the input inline or as @file, and --answer"
	}
	var once sync.Once
	return func(ctx context.Context, method string, params any) (any, error) {
		if method == toolkit.MethodElicit {
			once.Do(func() { fmt.Fprintln(out, hint) })
		}
		return nil, fmt.Errorf("this caller cannot answer %s requests", method)
	}
}

// terminalAsker answers elicitations from in, prompting on out, one at a
// time: a tool may put several at once (bus.MaxAsksPerCall), and the
// person answers the one on the screen. One whose call ends while it
// waits its turn is not asked.
func terminalAsker(in io.Reader, out io.Writer) bus.Asker {
	r := bufio.NewReader(in)
	turn := make(chan struct{}, 1)
	return func(ctx context.Context, method string, params any) (any, error) {
		if method != toolkit.MethodElicit {
			return nil, fmt.Errorf("toolctl cannot answer %s requests", method)
		}
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		defer func() { <-turn }()
		p, _ := params.(map[string]any)
		msg, _ := p["message"].(string)
		schema, _ := p["requestedSchema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		var required []string
		if rs, ok := schema["required"].([]any); ok {
			for _, x := range rs {
				if s, ok := x.(string); ok {
					required = append(required, s)
				}
			}
		}
		// The prompt and the fields are the tool's (an MCP server's).
		fmt.Fprintf(out, "toolctl: the tool asks: %s\n", printableText(msg))
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		content := map[string]any{}
		for _, name := range names {
			prop, _ := props[name].(map[string]any)
			typ, _ := prop["type"].(string)
			req := slices.Contains(required, name)
			for {
				label := typ
				if req {
					label += ", required"
				}
				fmt.Fprintf(out, "  %s (%s): ", plain(name), plain(label))
				line, err := readAnswer(r)
				line = strings.TrimSpace(line)
				if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
					fmt.Fprintln(out)
					if errors.Is(err, io.EOF) {
						return map[string]any{"action": "cancel"}, nil
					}
					return nil, err
				}
				if line == "" {
					if req {
						return map[string]any{"action": "decline"}, nil
					}
					break
				}
				v, perr := parseAnswer(typ, line)
				if perr != nil {
					fmt.Fprintf(out, "  %v; again\n", perr)
					continue
				}
				content[name] = v
				break
			}
		}
		return map[string]any{"action": "accept", "content": content}, nil
	}
}

// parseAnswer reads a typed line: numbers, booleans (y/yes/true, n/no/false)
// or text.
func parseAnswer(typ, s string) (any, error) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", s)
	}
	return s, nil
}
