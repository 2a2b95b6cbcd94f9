package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// Tests against the real npm reference servers
// (@modelcontextprotocol/server-everything and server-filesystem, pinned in
// testdata/npm/package.json).

// everything returns server-everything's config over each transport.
func everything(t *testing.T) map[string]func(t *testing.T, name string) ServerConfig {
	return map[string]func(t *testing.T, name string) ServerConfig{
		"stdio": everythingStdio,
		"streamable-http": func(t *testing.T, name string) ServerConfig {
			return ServerConfig{Name: name, Transport: TransportStreamableHTTP, URL: startEverythingHTTP(t, "streamableHttp") + "/mcp"}
		},
		"sse": func(t *testing.T, name string) ServerConfig {
			return ServerConfig{Name: name, Transport: TransportSSE, URL: startEverythingHTTP(t, "sse") + "/sse"}
		},
	}
}

// rawTools lists a server's tools with a plain go-sdk client, as the
// reference for names and annotations.
func rawTools(t *testing.T, c *Client) []*sdk.Tool {
	t.Helper()
	var tools []*sdk.Tool
	ctx := testCtx(t)
	err := c.withSession(ctx, true, func(cs *sdk.ClientSession) error {
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			tools = append(tools, tl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func TestEverything(t *testing.T) {
	for transport, peer := range everything(t) {
		t.Run(transport, func(t *testing.T) {
			tk, c := mount(t, peer(t, "ev"))
			ctx := testCtx(t)

			t.Run("list", func(t *testing.T) {
				raw := rawTools(t, c)
				if len(raw) < 10 {
					t.Fatalf("only %d tools", len(raw))
				}
				for _, rt := range raw {
					tl, ok := tk.Get(ToolName("ev", rt.Name))
					if !ok {
						t.Errorf("%s not registered", rt.Name)
						continue
					}
					ro := rt.Annotations != nil && rt.Annotations.ReadOnlyHint
					if tl.ReadOnly() != ro {
						t.Errorf("%s: ReadOnly=%v, annotation readOnlyHint=%v", rt.Name, tl.ReadOnly(), ro)
					}
					want := toolkit.IdempotencyUnknown
					switch {
					case ro:
						want = toolkit.NoSideEffects
					case rt.Annotations != nil && rt.Annotations.IdempotentHint:
						want = toolkit.Idempotent
					}
					if tl.Idempotency() != want || tl.ConcurrencySafe() {
						t.Errorf("%s: idempotency=%v concurrencySafe=%v", rt.Name, tl.Idempotency(), tl.ConcurrencySafe())
					}
				}
				if len(tk.Tools()) != len(raw) {
					t.Errorf("registered %d tools, server lists %d", len(tk.Tools()), len(raw))
				}
				echo, _ := tk.Get("mcp__ev__echo")
				if !echo.ReadOnly() {
					t.Error("echo is annotated read-only")
				}
			})

			t.Run("echo", func(t *testing.T) {
				r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": "hello"})
				if r.final.State != toolkit.StateSuccess || r.final.Text() != "Echo: hello" {
					t.Fatalf("final = %+v", r.final)
				}
				// A tool without arguments gets {} (never null).
				r = run(t, ctx, tk, "mcp__ev__get-tiny-image", nil)
				if r.final.State != toolkit.StateSuccess {
					t.Fatalf("get-tiny-image: %+v", r.final)
				}
				var img bool
				for _, b := range r.final.Content {
					if b.Type == toolkit.BlockData && b.MediaType == "image/png" {
						raw, err := base64.StdEncoding.DecodeString(b.Data)
						img = err == nil && strings.HasPrefix(string(raw), "\x89PNG")
					}
				}
				if !img {
					t.Errorf("no png data block in %+v", r.final.Content)
				}
			})

			t.Run("progress", func(t *testing.T) {
				r := run(t, ctx, tk, "mcp__ev__trigger-long-running-operation", map[string]any{"duration": 1, "steps": 4})
				if r.final.State != toolkit.StateSuccess || !strings.Contains(r.final.Text(), "Long running operation completed") {
					t.Fatalf("final = %+v", r.final)
				}
				want := []toolkit.Progress{{Progress: 1, Total: 4}, {Progress: 2, Total: 4}, {Progress: 3, Total: 4}, {Progress: 4, Total: 4}}
				if !slices.Equal(r.progress, want) {
					t.Fatalf("progress = %+v, want %+v", r.progress, want)
				}
			})

			t.Run("cancel", func(t *testing.T) {
				before := c.current()
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				var final *toolkit.Response
				var frames int
				for ev := range tk.Call(cctx, toolkit.ToolCall{ID: "long", Name: "mcp__ev__trigger-long-running-operation",
					Input: map[string]any{"duration": 30, "steps": 60}}) {
					if ev.Progress != nil {
						frames++
						cancel() // mid-way: the server has started and reported
					}
					if ev.Final != nil {
						final = ev.Final
					}
				}
				if final == nil || final.State != toolkit.StateInterrupted || frames == 0 {
					t.Fatalf("final = %+v after %d frames", final, frames)
				}
				r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": "after cancel"})
				if r.final.Text() != "Echo: after cancel" {
					t.Fatalf("echo after cancel = %+v", r.final)
				}
				if c.current() != before {
					t.Fatal("cancel replaced the session")
				}
			})

			t.Run("results", func(t *testing.T) {
				r := run(t, ctx, tk, "mcp__ev__get-resource-links", map[string]any{"count": 2})
				if n := strings.Count(r.final.Text(), "[resource link] "); n != 2 {
					t.Errorf("resource links: %d in %q", n, r.final.Text())
				}
				r = run(t, ctx, tk, "mcp__ev__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1})
				if !strings.Contains(r.final.Text(), `"uri": "demo://resource/static/document/`) && !strings.Contains(r.final.Text(), `"uri": "`) {
					t.Errorf("embedded text resource: %q", r.final.Text())
				}
				r = run(t, ctx, tk, "mcp__ev__get-structured-content", map[string]any{"location": "Chicago"})
				if _, ok := r.final.Metadata["structured_content"].(map[string]any); !ok {
					t.Errorf("structured content metadata = %v", r.final.Metadata)
				}
				r = run(t, ctx, tk, "mcp__ev__get-sum", map[string]any{"a": 2, "b": 3})
				if !strings.Contains(r.final.Text(), "5") {
					t.Errorf("get-sum = %+v", r.final)
				}
				// This server answers an unknown tool with isError (not a
				// JSON-RPC error): an error chunk.
				var got []toolkit.Chunk
				err := c.Call(ctx, "no-such-tool", nil, toolkit.WriterFuncs{Chunk: func(ch toolkit.Chunk) error { got = append(got, ch); return nil }})
				if err != nil || len(got) != 1 || got[0].State != toolkit.StateError || !strings.Contains(got[0].Content[0].Text, "no-such-tool") {
					t.Errorf("unknown tool = %v, %+v", err, got)
				}
			})
		})
	}
}

func TestEverythingStateless(t *testing.T) {
	for _, transport := range []string{"streamable-http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			cfg := everything(t)[transport](t, "ev")
			cfg.Mode = ModeStateless
			cfg.EnableTools = []string{"echo", "trigger-long-running-operation"}
			tk, c := mount(t, cfg)
			ctx := testCtx(t)
			for i := 0; i < 2; i++ {
				r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": "x"})
				if r.final.Text() != "Echo: x" {
					t.Fatalf("final = %+v", r.final)
				}
			}
			r := run(t, ctx, tk, "mcp__ev__trigger-long-running-operation", map[string]any{"duration": 0.5, "steps": 2})
			if r.final.State != toolkit.StateSuccess || len(r.progress) != 2 {
				t.Fatalf("final = %+v progress = %v", r.final, r.progress)
			}
			if c.current() != nil {
				t.Fatal("a stateless client kept a session")
			}
		})
	}
}

func TestEverythingFilters(t *testing.T) {
	cfg := everythingStdio(t, "ev")
	tests := []struct {
		name    string
		enable  []string
		disable []string
		want    []string // nil: everything except the disabled
		err     error
	}{
		{name: "enable", enable: []string{"echo", "get-sum"}, want: []string{"mcp__ev__echo", "mcp__ev__get-sum"}},
		{name: "disable", disable: []string{"echo", "get-sum"}},
		{name: "enable and disable", enable: []string{"echo", "get-sum"}, disable: []string{"nothing-here"}, want: []string{"mcp__ev__echo", "mcp__ev__get-sum"}},
		{name: "unknown enable", enable: []string{"echo", "no-such-tool"}, err: ErrUnknownTool},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfg
			cfg.EnableTools, cfg.DisableTools = tc.enable, tc.disable
			tk := toolkit.New(nil)
			c := newTestClient(t, cfg)
			err := c.Start(testCtx(t), tk)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "no-such-tool") {
					t.Fatalf("Start = %v, want %v", err, tc.err)
				}
				if len(tk.Tools()) != 0 {
					t.Fatal("tools registered despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tl := range tk.Tools() {
				got = append(got, tl.Name)
			}
			if tc.want != nil {
				if !slices.Equal(got, tc.want) {
					t.Fatalf("tools = %v, want %v", got, tc.want)
				}
				return
			}
			for _, d := range tc.disable {
				if slices.Contains(got, ToolName("ev", d)) {
					t.Errorf("%s registered although disabled", d)
				}
			}
			if !slices.Contains(got, "mcp__ev__trigger-long-running-operation") || len(got) < 8 {
				t.Errorf("tools = %v", got)
			}
		})
	}
}

func TestEverythingStdioRestart(t *testing.T) {
	tk, c := mount(t, everythingStdio(t, "ev"))
	ctx := testCtx(t)
	s := c.current()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": "back"})
	if r.final.Text() != "Echo: back" {
		t.Fatalf("final = %+v", r.final)
	}
	if c.current() == s {
		t.Fatal("still on the killed process's session")
	}
}

func TestFilesystem(t *testing.T) {
	entry := npmServer(t, "server-filesystem")
	dir := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)
	if err := os.WriteFile(filepath.Join(dir, "pic.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, _ := mount(t, ServerConfig{Name: "fs", Transport: TransportStdio, Command: "node", Args: []string{entry, dir},
		ConnectTimeout: Duration(time.Minute)})
	for _, tc := range []struct {
		tool     string
		readOnly bool
		idem     toolkit.Idempotency
	}{
		{"read_text_file", true, toolkit.NoSideEffects},
		{"list_directory", true, toolkit.NoSideEffects},
		{"write_file", false, toolkit.Idempotent},
		{"create_directory", false, toolkit.Idempotent},
		{"move_file", false, toolkit.IdempotencyUnknown},
		{"edit_file", false, toolkit.IdempotencyUnknown},
	} {
		tl, ok := tk.Get(ToolName("fs", tc.tool))
		if !ok {
			t.Errorf("%s not registered", tc.tool)
			continue
		}
		if tl.ReadOnly() != tc.readOnly || tl.Idempotency() != tc.idem {
			t.Errorf("%s: readOnly=%v idempotency=%v, want %v %v", tc.tool, tl.ReadOnly(), tl.Idempotency(), tc.readOnly, tc.idem)
		}
	}
	ctx := testCtx(t)
	r := run(t, ctx, tk, "mcp__fs__read_text_file", map[string]any{"path": filepath.Join(dir, "a.txt")})
	if r.final.State != toolkit.StateSuccess || !strings.Contains(r.final.Text(), "alpha") {
		t.Fatalf("read_text_file = %+v", r.final)
	}
	r = run(t, ctx, tk, "mcp__fs__read_media_file", map[string]any{"path": filepath.Join(dir, "pic.png")})
	if r.final.State != toolkit.StateSuccess || len(r.final.Content) != 1 {
		t.Fatalf("read_media_file = %+v", r.final)
	}
	if b := r.final.Content[0]; b.Type != toolkit.BlockData || b.MediaType != "image/png" || b.Data != base64.StdEncoding.EncodeToString(png) {
		t.Fatalf("media block = %+v", b)
	}
	// A path outside the allowed directory is the server's error: state error, tool_error.
	r = run(t, ctx, tk, "mcp__fs__read_text_file", map[string]any{"path": "/etc/hostname"})
	if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeToolError {
		t.Fatalf("outside path = %+v", r.final)
	}
}
