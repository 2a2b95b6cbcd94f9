package mcp

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestEmptyEnableToolsRefused: AgentScope filters by an enable list that
// is not None, so enable_tools=[] registers none of a server's tools
// (2.x mcp/_mcp_client.py:340-345, "if self.enable_tools is not None";
// 1.x register_mcp_client's enable_funcs alike). Read here as "no
// filter", the same config registered every tool; it is refused as
// invalid instead, saying what it would mean, from YAML as from Go,
// while a list left out (nil) still registers them all.
func TestEmptyEnableToolsRefused(t *testing.T) {
	var c ServerConfig
	if err := yaml.Unmarshal([]byte("name: s\ntransport: stdio\ncommand: srv\nenable_tools: []\n"), &c); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []ServerConfig{c, {Name: "s", Transport: TransportStdio, Command: "srv", EnableTools: []string{}}} {
		err := cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "enable_tools: empty") {
			t.Errorf("Validate(enable_tools %#v) = %v, want an ErrInvalidConfig for the empty enable_tools", cfg.EnableTools, err)
		}
	}
	c.EnableTools = nil
	if err := c.Validate(); err != nil {
		t.Errorf("Validate without enable_tools = %v", err)
	}
}
