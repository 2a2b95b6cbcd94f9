package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/permission"
)

func TestPermissions(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		on    bool
		mode  string
		rules []permission.Rule
		dirs  []string
	}{
		{"absent: unchecked", "", false, "", nil, nil},
		{"null: unchecked", "permissions:\n", false, "", nil, nil},
		{"empty mapping: mode default", "builtins:\n  workspace: /srv/ws\npermissions: {}\n", true, "default", nil, []string{"/srv/ws"}},
		{"rules, deny first", "permissions:\n  mode: ACCEPT-EDITS\n  allow: [\"execute_shell_command:git status:*\", echo]\n  ask: [\"write_text_file:*.env\"]\n  deny: [execute_python_code]\n  working_dirs: [/a, /b]\n",
			true, "ACCEPT-EDITS", []permission.Rule{
				{Tool: "execute_python_code", Behavior: permission.Deny, Source: "config"},
				{Tool: "write_text_file", Pattern: "*.env", Behavior: permission.Ask, Source: "config"},
				{Tool: "execute_shell_command", Pattern: "git status:*", Behavior: permission.Allow, Source: "config"},
				{Tool: "echo", Behavior: permission.Allow, Source: "config"},
			}, []string{"/a", "/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("w.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Permissions
			if (p != nil) != tt.on {
				t.Fatalf("permissions on = %v, want %v", p != nil, tt.on)
			}
			if p == nil {
				return
			}
			rules, err := p.Rules()
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode != tt.mode || !reflect.DeepEqual(rules, tt.rules) || !reflect.DeepEqual(cfg.WorkingDirs(), tt.dirs) {
				t.Errorf("mode %q rules %+v dirs %v; want %q %+v %v", p.Mode, rules, cfg.WorkingDirs(), tt.mode, tt.rules, tt.dirs)
			}
			// An unset approval_ttl is the bucket's; unset kv_replicas the
			// worker's --kv-replicas.
			if p.ApprovalTTL != 0 || p.KVReplicas != 0 {
				t.Errorf("defaults: ttl %v replicas %d", p.ApprovalTTL, p.KVReplicas)
			}
			// An unset check_timeout is the permission package's bound,
			// shown as such.
			if p.CheckTimeout != permission.DefaultCheckTimeout {
				t.Errorf("default check timeout %v, want %v", p.CheckTimeout, permission.DefaultCheckTimeout)
			}
			if _, err := permission.ParseMode(p.Mode); err != nil {
				t.Errorf("mode %q does not parse: %v", p.Mode, err)
			}
		})
	}
}

// TestPermissionsCheckTimeout: permissions.check_timeout is read as a
// duration; 0 is the default bound (there is no unbounded check).
func TestPermissionsCheckTimeout(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want time.Duration
	}{
		{"permissions:\n  check_timeout: 2m\n", 2 * time.Minute},
		{"permissions:\n  check_timeout: 250ms\n", 250 * time.Millisecond},
		{"permissions:\n  check_timeout: 0s\n", permission.DefaultCheckTimeout},
		{"permissions:\n  check_timeout:\n", permission.DefaultCheckTimeout},
	} {
		cfg, err := config.Parse("w.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := cfg.Permissions.CheckTimeout; got != tt.want {
			t.Errorf("%q: check timeout %v, want %v", tt.yaml, got, tt.want)
		}
	}
}
