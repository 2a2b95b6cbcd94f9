package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nuid"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/regularfile"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o callOptions
	register(&command{
		name:    "call",
		long:    true,
		args:    "NAME [JSON|@file|-]",
		summary: "call a tool: chunks to stdout as they arrive, progress to stderr; Ctrl-C cancels",
		flags:   o.register,
		run:     o.run,
	})
}

type callOptions struct {
	session string
	timeout time.Duration
	id      string
	json    bool
	verbose bool
	durable bool
	keep    bool
	answer  bool
	fs      *flag.FlagSet // the flags registered on, to tell --id "" from no --id
}

func (o *callOptions) register(fs *flag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.session, "session", "", "`session` the call belongs to (its active tool groups apply)")
	config.DurationVar(fs, &o.timeout, "timeout", 0, "give up after this `duration` (the call ends with code timeout); 0 means no deadline")
	fs.StringVar(&o.id, "id", "", "call `id` ([A-Za-z0-9_-], default a unique one), for toolctl cancel")
	fs.BoolVar(&o.json, "json", false, "print every event as a JSON line: {\"chunk\":…}, {\"progress\":…}, {\"log\":…}, {\"final\":…}")
	fs.BoolVar(&o.durable, "durable", false, "send the call on the durable path: it waits in the fleet's JetStream queue and survives a lost worker (README: Guarantees)")
	fs.BoolVar(&o.keep, "keep", false, "keep the call's result for a while (state.result_ttl): fetch it with toolctl result ID")
	fs.BoolVar(&o.answer, "answer", false, "answer the tool's requests for input (elicitation) from stdin, prompting on stderr; on by default when stdin is a terminal the input is not read from")
	fs.BoolVar(&o.verbose, "v", false, "print the call id at the start and the final's metadata (worker, …) at the end, on stderr")
}

func (o *callOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || len(args) > 2 {
		return e.usagef("call takes a tool name and an optional input: toolctl call NAME [JSON|@file|-]")
	}
	if o.timeout < 0 {
		return e.usagef("--timeout must not be negative, got %v", o.timeout)
	}
	name := args[0]
	if !toolkit.ValidToolName(name) {
		return e.usagef("invalid tool name %s: tool names are letters, digits, '_' and '-', at most %d bytes", wire.Quote(name), toolkit.MaxNameLen)
	}
	// --id "$ID" with ID unset is refused as cancel and result refuse
	// it: a random id would keep the result where nobody looks.
	if (o.id != "" || emptyFlag(o.fs, "id")) && !wire.ValidCallID(o.id) {
		return e.badCallID(o.id)
	}
	var input map[string]any
	var text []byte
	if len(args) == 2 {
		var err error
		if input, text, err = readInput(args[1], e.stdin); err != nil {
			return e.usagef("%v", err)
		}
	}
	id := o.id
	if id == "" {
		id = nuid.Next()
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.timeout)
		defer stop()
	}
	// The first Ctrl-C (or SIGTERM, or SIGHUP: the terminal closed)
	// cancels the call and waits for its interrupted final; the second
	// exits at once. Killed by a hang-up, toolctl would leave the call
	// running unseen; started with it ignored (nohup), it ignores it.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintf(e.stderr, "toolctl: cancelling call %s (Ctrl-C again to quit at once)\n", id)
		c.Cancel(id)
		cancel()
		select {
		case <-sigs:
			// Make sure the cancel left before quitting.
			e.nc.FlushTimeout(time.Second)
			fmt.Fprintln(e.stderr, "toolctl: quit without waiting for the final")
			os.Exit(130)
		case <-done:
		}
	}()

	stdinInput := len(args) == 2 && args[1] == "-"
	if o.answer || (terminal(e.stdin) && !stdinInput) {
		ctx = bus.WithAsker(ctx, terminalAsker(e.stdin, e.stderr))
	} else {
		ctx = bus.WithAsker(ctx, unansweredAsker(e.stderr, stdinInput))
	}
	if o.verbose {
		fmt.Fprintf(e.stderr, "toolctl: call %s: %s\n", id, name)
	}
	out := &printer{w: e.stdout, escape: terminal(e.stdout)}
	var final *toolkit.Response
	call := toolkit.ToolCall{ID: id, Name: name, Input: input, Session: o.session, Durable: o.durable, KeepResult: o.keep}
	if name == toolkit.MetaToolName && len(input) > 0 {
		// The text, which keeps what the map loses: the order the groups
		// were written in, and a 1.0 apart from a 1, which reset_tools'
		// answer to unknown names or a value that is not a bool tells
		// apart as AgentScope's does.
		call.RawInput, call.Input = string(text), nil
	}
	for ev := range c.Call(ctx, call) {
		switch {
		case errors.Is(context.Cause(ctx), errRefused):
			continue // what the client says of the call it ended is not the tool's output
		case o.json:
			// One line per event, every unprintable character \u-escaped
			// (the same JSON: encoding/json leaves C1 controls and bidi
			// overrides as they are).
			if b, err := json.Marshal(jsonEvent(ev)); err != nil {
				fmt.Fprintln(e.stderr, "toolctl:", err)
			} else {
				fmt.Fprintln(e.stdout, printableJSON(string(b)))
			}
			if ev.Final != nil {
				final = ev.Final
			}
		case ev.Chunk != nil:
			out.blocks(ev.Chunk.Content)
		case ev.Progress != nil:
			fmt.Fprintln(e.stderr, progressLine(ev.Progress))
		case ev.Log != nil:
			fmt.Fprintln(e.stderr, logLine(ev.Log))
		case ev.Final != nil:
			final = ev.Final
			out.final(final)
		}
	}
	out.end()
	if errors.Is(context.Cause(ctx), errRefused) {
		return exitUsage // the server dropped the call: run says why
	}
	if final == nil { // cannot happen: the client always yields a final
		fmt.Fprintln(e.stderr, "toolctl: the call ended without a final response")
		return exitError
	}
	if o.verbose && len(final.Metadata) > 0 {
		meta, _ := json.Marshal(final.Metadata)
		fmt.Fprintf(e.stderr, "toolctl: metadata %s\n", printableJSON(string(meta)))
		if line := pinLine(o.session, final.Metadata); line != "" {
			fmt.Fprintln(e.stderr, line)
		}
	}
	if final.State != toolkit.StateSuccess {
		// The wire checks the code, not the state: the worker's.
		fmt.Fprintf(e.stderr, "toolctl: call %s ended %s (code %s)\n", id, plain(string(final.State)), final.Code)
	}
	if final.Code == toolkit.CodeApprovalRequired {
		approvalHint(e, o.session, final)
	}
	if final.Code == toolkit.CodeNotFound {
		unknownToolHint(ctx, e, c, name)
	}
	if final.Code == toolkit.CodeGroupInactive {
		inactiveGroupHint(ctx, e, c, name, o.session)
	}
	if final.Code == toolkit.CodeInvalidInput && strings.HasPrefix(final.Text(), "Input validation failed for tool ") {
		invalidInputHint(ctx, e, c, name)
	}
	if final.Code == toolkit.CodeUnavailable {
		noWorkersHint(ctx, e, c)
	}
	return exitFor(final)
}

// noWorkersHint follows a call no worker could take: when no worker
// answers on the server at all (a NATS server of its own, started
// without workers), it says so and how to start one.
func noWorkersHint(ctx context.Context, e *env, c *bus.Client) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if fleet, err := c.Fleet(ctx); err == nil && len(fleet.Instances()) == 0 {
		fmt.Fprintf(e.stderr, "toolctl: no worker answers on %s (start a worker joined to that server: worker --nats URL)\n", urlredact.List(e.url()))
	}
}

// invalidInputHint follows a call whose input the tool's schema refused:
// the validator's message names what is wrong, not what the tool takes,
// so the person at toolctl is told its parameters and where the whole
// schema is.
func invalidInputHint(ctx context.Context, e *env, c *bus.Client, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	fleet, err := c.Fleet(ctx)
	if err != nil {
		return
	}
	for _, t := range fleet.Tools() {
		if t.Name == name {
			fmt.Fprintf(e.stderr, "toolctl: %s takes %s; toolctl tools --json shows its whole input schema\n", plain(name), paramSummary(t.Parameters, t.Order))
			return
		}
	}
}

// maxParamsSaid bounds the parameters paramSummary names.
const maxParamsSaid = 20

// paramSummary says the top-level parameters of a tool's input schema,
// in declaration order when order gives it: "a JSON object of: text
// (string, required), n (integer)".
func paramSummary(schema map[string]any, order []toolkit.KeyOrder) string {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return "no parameters: give {}"
	}
	var names []string
	for _, o := range order {
		if o.Path == "/properties" {
			names = slices.DeleteFunc(slices.Clone(o.Keys), func(k string) bool { _, ok := props[k]; return !ok })
		}
	}
	if len(names) != len(props) {
		names = slices.Sorted(maps.Keys(props))
	}
	required := map[string]bool{}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	parts := make([]string, 0, min(len(names), maxParamsSaid)+1)
	for i, n := range names {
		if i == maxParamsSaid {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		typ := "any"
		if p, ok := props[n].(map[string]any); ok {
			switch v := p["type"].(type) {
			case string:
				typ = v
			case []any:
				var ts []string
				for _, x := range v {
					if s, ok := x.(string); ok {
						ts = append(ts, s)
					}
				}
				if len(ts) > 0 {
					typ = strings.Join(ts, " or ")
				}
			}
		}
		if required[n] {
			typ += ", required"
		}
		parts = append(parts, plain(n)+" ("+plain(typ)+")")
	}
	return "a JSON object of: " + strings.Join(parts, ", ")
}

// unknownToolHint follows a call of a tool no worker serves: the fleet's
// tool of the nearest name (a typo, most often) and where to see them all.
func unknownToolHint(ctx context.Context, e *env, c *bus.Client, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	near := ""
	if fleet, err := c.Fleet(ctx); err == nil {
		near = nearestTool(fleet, name)
	}
	if near != "" {
		fmt.Fprintf(e.stderr, "toolctl: no worker serves %s: did you mean %s? (toolctl tools lists the fleet's tools)\n", name, near)
	} else {
		fmt.Fprintf(e.stderr, "toolctl: no worker serves %s: toolctl tools lists the fleet's tools\n", name)
	}
}

// inactiveGroupHint follows a call that ended group_inactive: the
// toolkit's message tells a model to call reset_tools, while the person
// at toolctl needs the command that activates the group. A call without
// --session is the default session, which has no groups of its own
// (groups set and reset_tools refuse it): it names a session to use.
// groups set activates exactly the groups given, so the command keeps
// the session's active groups.
func inactiveGroupHint(ctx context.Context, e *env, c *bus.Client, name, session string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	group := "GROUP"
	if fleet, err := c.Fleet(ctx); err == nil {
		if t, ok := fleet.ToolInfo(name); ok && t.Group != "" {
			group = shellQuote(t.Group)
		}
	}
	if session == "" {
		fmt.Fprintf(e.stderr, "toolctl: a call without --session cannot activate groups: activate %s for a session with toolctl groups set --session S %s, then toolctl call --session S %s\n", group, group, shellQuote(name))
		return
	}
	groups := []string{}
	if active, err := c.ActiveGroups(ctx, session, 0); err == nil {
		for _, g := range active {
			groups = append(groups, shellQuote(g))
		}
	}
	groups = append(groups, group)
	fmt.Fprintf(e.stderr, "toolctl: activate its group for the session with: toolctl groups set --session %s %s\n", shellQuote(session), strings.Join(groups, " "))
}

// nearestTool is the fleet's tool whose name is nearest to name, when
// near enough to be what was meant; else "".
func nearestTool(fleet *discovery.Fleet, name string) string {
	near, best := "", 0
	for _, t := range fleet.Tools() {
		d := editDistance(strings.ToLower(name), strings.ToLower(t.Name))
		if d <= max(1, len(name)/4) && (near == "" || d < best) {
			near, best = t.Name, d
		}
	}
	return near
}

// editDistance is the distance between a and b in bytes: insertions,
// deletions, substitutions and swaps of two neighbours (the optimal
// string alignment distance), so "ecoh" is one edit from "echo".
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// maxInputBytes bounds a call's input as toolctl reads it: NATS carries
// no message over 64 MiB (the most max_payload may be), so a larger input
// could not be sent, and /dev/zero or a runaway pipe must not fill memory.
const maxInputBytes = 64 << 20

// openInput opens a file of input, which may be a pipe (<(cmd)); a file
// that cannot be opened for what it is, a socket say, is named so (its
// open says only "no such device or address").
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() && !st.IsDir() {
			return nil, fmt.Errorf("%s is %s: give a file, or - for stdin", path, regularfile.Kind(st.Mode()))
		}
	}
	return f, err
}

// readInput reads a call's input: a JSON object given inline, in a file
// (@file) or on stdin (-), of at most maxInputBytes; it returns the text
// too.
func readInput(arg string, stdin io.Reader) (map[string]any, []byte, error) {
	src, data := "the input", []byte(arg)
	switch {
	case arg == "-":
		var err error
		src = "the input on stdin"
		if data, err = io.ReadAll(io.LimitReader(stdin, maxInputBytes+1)); err != nil {
			return nil, nil, fmt.Errorf("reading the input from stdin: %w", err)
		}
	case arg == "@":
		// @"$FILE" with FILE unset: opening "" says nothing of the @.
		return nil, nil, errors.New("@ needs a file name: @input.json reads the input from input.json (- reads stdin)")
	case strings.HasPrefix(arg, "@"):
		src = "the input in " + arg[1:]
		f, err := openInput(arg[1:])
		if err != nil {
			return nil, nil, fmt.Errorf("reading the input: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxInputBytes {
			return nil, nil, fmt.Errorf("%s is %d bytes, over the %d a call's input may be", src, st.Size(), maxInputBytes)
		}
		if data, err = io.ReadAll(io.LimitReader(f, maxInputBytes+1)); err != nil {
			return nil, nil, fmt.Errorf("reading the input: %w", err)
		}
	}
	if len(data) > maxInputBytes {
		return nil, nil, fmt.Errorf("%s is over the %d bytes a call's input may be", src, maxInputBytes)
	}
	if !utf8.Valid(data) {
		at := 0
		for rest := data; len(rest) > 0; {
			r, n := utf8.DecodeRune(rest)
			if r == utf8.RuneError && n == 1 {
				break
			}
			at, rest = at+n, rest[n:]
		}
		return nil, nil, fmt.Errorf("%s is not valid UTF-8 (at byte offset %d): JSON is UTF-8, and a byte that is not would be changed, not sent", src, at)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s is empty; give a JSON object such as '{\"text\":\"hi\"}'", src)
		}
		return nil, nil, fmt.Errorf("%s is not valid JSON: %v%s", src, err, jsonHint(arg, data, err))
	}
	if moreAfter(dec, data) {
		return nil, nil, fmt.Errorf("%s has more than one JSON value; give one object", src)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s must be a JSON object of arguments such as '{\"text\":\"hi\"}', got %s", src, jsonKind(v))
	}
	return toolkit.ExactIntegers(data, obj), data, nil
}

// moreAfter reports whether data holds more than white space after the
// value dec decoded from it (dec.More misses a stray "}" or "]").
func moreAfter(dec *json.Decoder, data []byte) bool {
	return len(bytes.Trim(data[dec.InputOffset():], " \t\r\n")) > 0
}

// jsonHint helps with a JSON syntax error: where it is in a file or on
// stdin; how to quote the input for the shell, which drops double quotes
// and splits at spaces unless the JSON is in single quotes.
// A single quote where JSON wants a value or a key is JSON written as
// Python or JavaScript write it ({'text': 'hi'}): the shell passed it
// as typed, so quoting the argument again would not help.
func jsonHint(arg string, data []byte, err error) string {
	var se *json.SyntaxError
	singleQuote := errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(data) && data[se.Offset-1] == '\''
	const doubleQuotes = "\n  JSON takes double quotes around keys and strings, not single ones: {\"text\":\"hi\"}"
	inline := arg != "-" && !strings.HasPrefix(arg, "@")
	if inline {
		if singleQuote {
			return doubleQuotes + ", in single quotes for the shell: toolctl call NAME '{\"text\":\"hi\"}'"
		}
		return "\n  put the JSON in single quotes: toolctl call NAME '{\"text\":\"hi\"}', or give @file or - for stdin"
	}
	if se == nil {
		return ""
	}
	before := data[:min(int(se.Offset), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n') - 1
	hint := fmt.Sprintf(" (line %d, column %d)", line, col)
	if singleQuote {
		hint += doubleQuotes
	}
	return hint
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// printer writes blocks to stdout as they come: text as is, data as a
// one-line note. Streamed text runs on from chunk to chunk (a tool may
// stream a line in pieces); what is not part of it starts on a line of its
// own: data, the bus's notes ("[toolbus] …"), text the client added to the
// final, and each block of a final that was not streamed.
//
// With escape (stdout is a terminal) the text's unprintable characters but
// line breaks and tabs are printed Go-escaped (printableText): the output
// is the tool's, often a mounted MCP server's, and must not drive the
// operator's terminal. A character cut between two chunks is held until
// its rest comes, so that its pieces, each escaped as bytes that are not
// UTF-8, cannot make a whole one on the terminal. To a file or a pipe it
// is written exact.
type printer struct {
	w      io.Writer
	escape bool
	wrote  bool
	nl     bool            // the last byte written was a newline
	text   strings.Builder // the text streamed so far
	cut    string          // with escape: the start of a character the next text may finish
}

// busNote begins the text blocks the bus adds to a call's content.
const busNote = "[toolbus] "

// final prints what the final response holds beyond the streamed chunks:
// all of it when nothing was streamed, else the text the client added
// (when it ended the call itself, e.g. worker_lost).
func (p *printer) final(r *toolkit.Response) {
	if !p.wrote {
		p.write(r.Content, true)
		return
	}
	if rest, ok := strings.CutPrefix(r.Text(), p.text.String()); ok && rest != "" {
		p.write([]toolkit.Block{{Type: toolkit.BlockText, Text: rest}}, true)
	}
}

// blocks prints a streamed chunk's blocks.
func (p *printer) blocks(bs []toolkit.Block) { p.write(bs, false) }

// write prints blocks; apart starts each on a line of its own.
func (p *printer) write(bs []toolkit.Block, apart bool) {
	for _, b := range bs {
		var s string
		switch {
		case b.Type == toolkit.BlockText:
			s = b.Text
		case b.URL != "":
			s = fmt.Sprintf("[data %s %s]\n", plain(b.MediaType), plain(b.URL))
		default:
			s = fmt.Sprintf("[data %s, %d base64 characters]\n", plain(b.MediaType), len(b.Data))
		}
		if s == "" {
			continue
		}
		if apart || b.Type != toolkit.BlockText || strings.HasPrefix(s, busNote) {
			p.end()
		}
		if b.Type == toolkit.BlockText {
			p.text.WriteString(s)
			if p.escape {
				s, p.cut = p.cut+s, ""
				if n := cutRune(s); n > 0 && !apart {
					s, p.cut = s[:len(s)-n], s[len(s)-n:]
				}
				s = printableText(s)
			}
		}
		io.WriteString(p.w, s)
		p.wrote, p.nl = true, strings.HasSuffix(s, "\n")
	}
}

// cutRune is the length of the start of a character that s ends with
// (0 if none).
func cutRune(s string) int {
	for n := 1; n <= min(len(s), utf8.UTFMax-1); n++ {
		if utf8.RuneStart(s[len(s)-n]) {
			if utf8.FullRuneInString(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}

// end finishes the line written last, if any.
func (p *printer) end() {
	if p.cut != "" {
		io.WriteString(p.w, printableText(p.cut))
		p.cut, p.nl = "", false
	}
	if p.wrote && !p.nl {
		io.WriteString(p.w, "\n")
		p.nl = true
	}
}

func progressLine(p *toolkit.Progress) string {
	s := fmt.Sprintf("progress %g", p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		s += ": " + printableText(p.Message)
	}
	return s
}

func jsonEvent(ev toolkit.Event) any {
	switch {
	case ev.Chunk != nil:
		return map[string]any{"chunk": ev.Chunk}
	case ev.Progress != nil:
		return map[string]any{"progress": ev.Progress}
	case ev.Log != nil:
		return map[string]any{"log": ev.Log}
	default:
		return map[string]any{"final": ev.Final}
	}
}

// logLine is a tool's log message as toolctl call prints it on stderr:
// "log <level> [<logger>] <data>", data as JSON unless it is a string.
// They are the tool's (an MCP server's): nothing unprintable in them
// reaches the terminal as it is.
func logLine(m *toolkit.LogMessage) string {
	data, ok := m.Data.(string)
	if ok {
		data = printableText(data)
	} else {
		b, _ := json.Marshal(m.Data)
		data = printableJSON(string(b))
	}
	if m.Logger != "" {
		return fmt.Sprintf("log %s [%s] %s", m.Level, plain(m.Logger), data)
	}
	return fmt.Sprintf("log %s %s", m.Level, data)
}

// pinLine is call -v's line on where the call's session is pinned, from
// the final's metadata; "" for a call of no session-bound tool. A session
// moved to a worker of the name it had is on a new run of that worker
// (its state gone all the same), not on a worker it left.
func pinLine(session string, meta map[string]any) string {
	pinned, ok := meta[wire.MetaSessionWorker].(string)
	if !ok {
		return ""
	}
	if session == "" {
		session = "(default)"
	}
	from, moved := meta[wire.MetaSessionMovedFrom].(string)
	switch {
	case !moved:
		return fmt.Sprintf("toolctl: session %s is pinned to worker %s", plain(session), plain(pinned))
	case from == pinned:
		return fmt.Sprintf("toolctl: session %s is pinned to worker %s, started again since its last call there", plain(session), plain(pinned))
	}
	return fmt.Sprintf("toolctl: session %s moved from worker %s (gone) to worker %s", plain(session), plain(from), plain(pinned))
}
