package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// The commands against a running fleet are tested as processes in
// cmd/worker (toolctl_test.go); these are the pure parts.

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args    []string
		pos     []string
		session string
		json    bool
		err     bool
	}{
		{[]string{"echo", `{"text":"x"}`}, []string{"echo", `{"text":"x"}`}, "", false, false},
		{[]string{"--session", "s", "echo", "-"}, []string{"echo", "-"}, "s", false, false},
		{[]string{"echo", "--json", "{}", "--session=s"}, []string{"echo", "{}"}, "s", true, false},
		{[]string{"echo", "--", "--json"}, []string{"echo", "--json"}, "", false, false},
		{[]string{"echo", "--bogus"}, nil, "", false, true},
		{[]string{"--session"}, nil, "", false, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			session := fs.String("session", "", "")
			asJSON := fs.Bool("json", false, "")
			pos, err := parseInterspersed(fs, tt.args)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (!slices.Equal(pos, tt.pos) || *session != tt.session || *asJSON != tt.json) {
				t.Errorf("pos %q session %q json %v", pos, *session, *asJSON)
			}
		})
	}
}

func TestReadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(file, []byte(`{"n": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file over the limit is refused before it is read.
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxInputBytes+2); err != nil {
		t.Fatal(err)
	}
	// A socket cannot be opened ("no such device or address"): the
	// error says what it is.
	sock := filepath.Join(t.TempDir(), "in.sock")
	l, err := ostest.ListenUnix(t, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		arg, stdin string
		want       map[string]any
		err        string
	}{
		{arg: "@" + sock, err: "reading the input: " + sock + " is a socket: give a file, or - for stdin"},
		{arg: `{"text":"hi"}`, want: map[string]any{"text": "hi"}},
		{arg: " {} ", want: map[string]any{}},
		{arg: "-", stdin: `{"a":[1,true]}`, want: map[string]any{"a": []any{1.0, true}}},
		{arg: "@" + file, want: map[string]any{"n": 2.0}},
		{arg: `{"id":9007199254740993,"r":0.5}`, want: map[string]any{"id": int64(9007199254740993), "r": 0.5}}, // exact, not the nearest float64
		{arg: "@" + file + ".missing", err: "reading the input: open"},
		{arg: "-", stdin: "", err: "the input on stdin is empty"},
		{arg: "", err: "the input is empty"},
		{arg: `{"a":`, err: "the input is not valid JSON"},
		{arg: `{text:hi}`, err: `put the JSON in single quotes: toolctl call NAME '{"text":"hi"}', or give @file or - for stdin`},
		{arg: "-", stdin: `{text:hi}`, err: "the input on stdin is not valid JSON: invalid character 't' looking for beginning of object key string (line 1, column 2)"},
		// Single quotes in the JSON (as Python writes it): quoting it
		// for the shell again would not help.
		{arg: `{'text':'hi'}`, err: `JSON takes double quotes around keys and strings, not single ones: {"text":"hi"}, in single quotes for the shell: toolctl call NAME '{"text":"hi"}'`},
		{arg: `{"text":'hi'}`, err: `JSON takes double quotes around keys and strings, not single ones`},
		{arg: "-", stdin: "{\n 'text': 'hi'}", err: "invalid character '\\'' looking for beginning of object key string (line 2, column 2)\n  JSON takes double quotes around keys and strings, not single ones"},
		{arg: `{} {}`, err: "more than one JSON value"},
		{arg: `[1]`, err: "got an array"},
		{arg: `"hi"`, err: "got a string"},
		{arg: `null`, err: "got null"},
		{arg: `3`, err: "got a number"},
		{arg: "-", stdin: "{\"text\":\"a\xffb\"}", err: "the input on stdin is not valid UTF-8 (at byte offset 10): JSON is UTF-8"},
		{arg: "{\"text\":\"\xc3\"}", err: "the input is not valid UTF-8 (at byte offset 9): JSON is UTF-8"},
		{arg: "@" + big, err: fmt.Sprintf("the input in %s is %d bytes, over the %d a call's input may be", big, maxInputBytes+2, maxInputBytes)},
		{arg: "@/dev/zero", err: fmt.Sprintf("the input in /dev/zero is over the %d bytes a call's input may be", maxInputBytes)},
		{arg: "-", stdin: strings.Repeat(" ", maxInputBytes+1), err: fmt.Sprintf("the input on stdin is over the %d bytes a call's input may be", maxInputBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, _, err := readInput(tt.arg, strings.NewReader(tt.stdin))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalJSON(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !equalJSON(v, bm[k]) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		return ok && slices.EqualFunc(a, bs, func(x, y any) bool { return equalJSON(x, y) })
	}
	return a == b
}

func TestExitFor(t *testing.T) {
	for code, want := range map[toolkit.Code]int{
		"": exitOK, toolkit.CodeToolError: exitError, toolkit.CodeTimeout: exitError, toolkit.CodeNotFound: exitError,
		toolkit.CodeDenied: exitDenied, toolkit.CodeApprovalRequired: exitDenied, toolkit.CodeInterrupted: exitInterrupted,
		toolkit.CodeWorkerLost: exitError,
	} {
		if got := exitFor(&toolkit.Response{State: code.State(), Code: code}); got != want {
			t.Errorf("%q: exit %d, want %d", code, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(c *config.Config)
		want string
	}{
		{"default", func(*config.Config) {}, "nats://127.0.0.1:4222"},
		{"servers", func(c *config.Config) { c.NATS.URLs = []string{"nats://a:1", "b:2"} }, "nats://a:1,b:2"},
		{"embedded on all interfaces", func(c *config.Config) { c.Embedded.Listen = "0.0.0.0:5222" }, "nats://127.0.0.1:5222"},
		{"embedded on localhost", func(c *config.Config) { c.Embedded.Listen = "localhost:5222" }, "nats://localhost:5222"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.cfg(c)
			if got := (&env{cfg: c}).url(); got != tt.want {
				t.Errorf("url() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCommandsRegistered(t *testing.T) {
	for _, name := range []string{"tools", "call", "cancel", "groups"} {
		c, ok := commands[name]
		if !ok || c.run == nil || c.summary == "" {
			t.Errorf("command %q: %+v", name, c)
		}
	}
}

func TestPrinter(t *testing.T) {
	text := func(s string) toolkit.Block { return toolkit.Block{Type: toolkit.BlockText, Text: s} }
	tests := []struct {
		name   string
		chunks [][]toolkit.Block
		final  []toolkit.Block
		want   string
	}{
		{"final only", nil, []toolkit.Block{text("hi")}, "hi\n"},
		{"streamed", [][]toolkit.Block{{text("a\n")}, {text("b\n")}}, []toolkit.Block{text("a\nb\n")}, "a\nb\n"},
		{"client added text", [][]toolkit.Block{{text("a\n")}}, []toolkit.Block{text("a\nInterrupted.")}, "a\nInterrupted.\n"},
		{"data", nil, []toolkit.Block{{Type: toolkit.BlockData, MediaType: "image/png", Data: "aGk="}}, "[data image/png, 4 base64 characters]\n"},
		{"empty", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			p := &printer{w: &b}
			for _, c := range tt.chunks {
				p.blocks(c)
			}
			p.final(&toolkit.Response{Content: tt.final})
			p.end()
			if b.String() != tt.want {
				t.Errorf("printed %q, want %q", b.String(), tt.want)
			}
		})
	}
}

// TestVersionCommand: toolctl version prints its version without NATS;
// so does toolctl --version, as worker --version does (it was refused as
// an unknown flag).
func TestVersionCommand(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		var out, errb strings.Builder
		if code := run(context.Background(), []string{arg}, strings.NewReader(""), &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), "toolctl ") {
			t.Errorf("toolctl %s: exit %d %q %q", arg, code, out.String(), errb.String())
		}
	}
}

// TestStateImportMoreAfterValue: a state with more after its JSON value is
// refused before connecting (exit 2), whatever follows it: a stray "}" or
// "]" passed json.Decoder.More and was imported with the rest ignored.
func TestStateImportMoreAfterValue(t *testing.T) {
	for _, in := range []string{`{"active_groups": []} {}`, `{"active_groups": []}}`, `{"active_groups": []}]`} {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "state", "import", "--session", "s1", "-"}, strings.NewReader(in), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "more than one JSON value") {
			t.Errorf("state %s: exit %d %q", in, code, errb.String())
		}
	}
	for _, in := range []string{`{}}`, `{"a":1}]`} {
		if _, _, err := readInput(in, nil); err == nil || !strings.Contains(err.Error(), "more than one JSON value") {
			t.Errorf("input %s: err = %v", in, err)
		}
	}
}

// TestStateImportWithoutActiveGroups: a state without its active_groups
// list ({}, null, a null list) or an empty one is refused before
// connecting (exit 2); it was imported as no groups, deactivating every
// group of the session.
func TestStateImportWithoutActiveGroups(t *testing.T) {
	for _, in := range []string{`{}`, `null`, `{"active_groups": null}`, ``, " \n"} {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "state", "import", "--session", "s1", "-"}, strings.NewReader(in), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), `{"active_groups": [...]}`) {
			t.Errorf("state %q: exit %d %q", in, code, errb.String())
		}
	}
	// [] is a state: no group active; it gets as far as connecting.
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "state", "import", "--session", "s1", "-"}, strings.NewReader(`{"active_groups": []}`), &out, &errb)
	if code != exitNoNATS {
		t.Errorf(`state {"active_groups": []}: exit %d %q`, code, errb.String())
	}
}

// TestConfigEmpty: --config with an empty value, before or after the
// command, is bad usage (exit 2) before connecting; it was taken for no
// --config and toolctl connected to the default server.
func TestConfigEmpty(t *testing.T) {
	for _, args := range [][]string{{"--config", "", "tools"}, {"tools", "--config="}} {
		var out, errb strings.Builder
		code := run(context.Background(), append([]string{"--nats", "nats://127.0.0.1:1"}, args...), strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "--config needs a file") {
			t.Errorf("%q: exit %d %q", args, code, errb.String())
		}
	}
}

// TestAuthInitEmptyCaller: --caller "" (an unset $AGENT) added no caller
// and said nothing; it is bad usage now, before anything is written.
func TestAuthInitEmptyCaller(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	for _, v := range []string{"", " , "} {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"auth", "init", "--dir", dir, "--caller", v}, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "want a caller identity") {
			t.Errorf("--caller %q: exit %d %q", v, code, errb.String())
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory was made: %v", err)
	}
}

// TestCallEmptyID: call --id "" (--id "$ID" with ID unset) is bad usage
// before connecting, as an empty id is for cancel and result; it was
// taken for no --id and the call ran under an id nobody knew, so a
// --keep result could not be fetched.
func TestCallEmptyID(t *testing.T) {
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "call", "--keep", "--id", "", "echo", `{"text":"a"}`}, strings.NewReader(""), &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), `invalid call id ""`) {
		t.Errorf("call --id '': exit %d %q", code, errb.String())
	}
}

// TestMCPServeZeroBounds: --max-sessions, --max-conns, --max-calls and
// --max-session-calls 0 are bad usage, as --session-timeout 0 is: the
// gateway took 0 for its default (1024 sessions, say) without a word,
// while the help offers a number or a negative one for no bound.
func TestMCPServeZeroBounds(t *testing.T) {
	for _, name := range []string{"--max-sessions", "--max-conns", "--max-session-calls", "--max-calls"} {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "mcp", "serve", "--listen", "127.0.0.1:0", name, "0"}, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), name+" must not be 0") {
			t.Errorf("%s 0: exit %d %q", name, code, errb.String())
		}
	}
}

// TestConnFilesNotWhatTheySay: a CA file that holds no certificate or a
// credentials file without an nkey seed is bad input (exit 2), as an
// nkey file without a seed is, not "NATS unreachable" (exit 5).
func TestConnFilesNotWhatTheySay(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--tls-ca", "--creds", "--nkey"} {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", flag, junk, "tools"}, strings.NewReader(""), &out, &errb)
		if code != exitUsage {
			t.Errorf("%s junk: exit %d %q", flag, code, errb.String())
		}
	}
}

// TestMCPServeBadHTTP: mcp serve --http with what is not HOST:PORT is bad
// usage before connecting (exit 2), as the same --listen is; it was found
// only when the endpoint failed to listen, after the gateway had started
// (exit 1).
func TestMCPServeBadHTTP(t *testing.T) {
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "mcp", "serve", "--listen", "127.0.0.1:0", "--http", "foo"}, strings.NewReader(""), &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), `invalid --http "foo"`) {
		t.Errorf("--http foo: exit %d %q", code, errb.String())
	}
}
