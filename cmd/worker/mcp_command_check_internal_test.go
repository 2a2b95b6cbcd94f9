package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/mcp"
)

// --check-config said "configuration OK" of a stdio MCP server whose
// command is not there: the worker then starts without its tools. It now
// warns of it (the start still goes on: the command may be installed
// later, and the worker tries the server again in the background).
func TestCheckConfigWarnsOfMissingMCPCommands(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "srv")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{MCPServers: []mcp.ServerConfig{
		{Name: "found", Transport: mcp.TransportStdio, Command: "sh"},
		{Name: "relative", Transport: mcp.TransportStdio, Command: "./srv", Cwd: dir},
		{Name: "absolute", Transport: mcp.TransportStdio, Command: exe},
		{Name: "missing", Transport: mcp.TransportStdio, Command: "no-such-mcp-server-command"},
		{Name: "gone", Transport: mcp.TransportStdio, Command: filepath.Join(dir, "gone")},
		{Name: "plain", Transport: mcp.TransportStdio, Command: "./data", Cwd: dir},
		{Name: "web", Transport: mcp.TransportStreamableHTTP, URL: "http://127.0.0.1:1/mcp"},
	}}
	var out bytes.Buffer
	if err := checkMounts(cfg, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, name := range []string{"missing", "gone", "plain"} {
		if !strings.Contains(got, "warning: mcp server "+name+": ") {
			t.Errorf("no warning for %s:\n%s", name, got)
		}
	}
	for _, name := range []string{"found", "relative", "absolute", "web"} {
		if strings.Contains(got, "mcp server "+name+":") {
			t.Errorf("a warning for %s:\n%s", name, got)
		}
	}
}
