package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/config"
)

// Values given through YAML aliases (*name, and merges "<<: *name") are
// where the alias puts them: an error about one names the key it is
// used under, and a value given so counts as given. The index of the
// file's keys did not follow aliases: an unknown key under an alias was
// reported under the anchor's key, saying it is unknown where it is
// allowed; two values of the wrong type were both reported under the
// anchor's key; and a duration of 0 given through an alias read as not
// given, so its default replaced it.
func TestAliases(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string // the errors, in order
	}{
		{"unknown key under an alias", "nats: &n {urls: [\"nats://a:1\"]}\nembedded: *n\n",
			[]string{`w.yaml:1: embedded.urls: unknown key "urls" (allowed here: listen, store_dir, server_config, insecure)`}},
		{"wrong type under an alias", "instance: &i [a]\nqueue_group: *i\n",
			[]string{`w.yaml:1: instance: invalid value (a list): want a string`, `w.yaml:1: queue_group: invalid value (a list): want a string`}},
		{"unknown key merged", "groups:\n  - &g {name: a, description: d, colour: red}\n  - <<: *g\n    name: b\n",
			[]string{`w.yaml:2: groups[0].colour: unknown key "colour" (allowed here: name, description, instructions, active)`,
				`w.yaml:2: groups[1].colour: unknown key "colour" (allowed here: name, description, instructions, active)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("w.yaml", []byte(tt.yaml))
			var es config.Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want %d errors", err, len(tt.want))
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	cfg, err := config.Parse("w.yaml", []byte("middleware:\n  default_timeout: &none 0s\ngrace_period: *none\nembedded:\n  listen: &l 127.0.0.1:4333\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GracePeriod != 0 {
		t.Errorf("grace_period: *none (0s) read as %v, want 0: given, not the default", cfg.GracePeriod)
	}
	cfg, err = config.Parse("w.yaml", []byte("x-listen: &l 127.0.0.1:4333\n"))
	if err == nil {
		t.Errorf("an unknown top-level key holding an anchor was accepted: %v", cfg)
	}
	cfg, err = config.Parse("w.yaml", []byte("instance: &l w1\nembedded:\n  listen: *l\n"))
	if err == nil || !strings.Contains(err.Error(), "embedded.listen") {
		t.Errorf("embedded.listen: *l (w1) gave %v, want an error about embedded.listen", err)
	}
	cfg, err = config.Parse("w.yaml", []byte("durable:\n  ack_wait: &w 45s\nembedded:\n  listen: 127.0.0.1:4333\nstate:\n  result_ttl: *w\n"))
	if err != nil || !cfg.Has("state.result_ttl") || cfg.State.ResultTTL != 45*time.Second {
		t.Errorf("result_ttl: *w: has %v, %v, %v; want given, 45s", cfg != nil && cfg.Has("state.result_ttl"), cfg, err)
	}
}

// Aliases that multiply (a billion laughs) are refused, without the
// index of the file's keys following them all.
func TestAliasesMultiplying(t *testing.T) {
	const n = 20000
	y := "mcp_servers:\n  - &m\n    name: s\n    command: x\n    args: [&s " + strings.Repeat("y", 100) + strings.Repeat(", *s", n) + "]\n" +
		"  - *m" + strings.Repeat("\n  - *m", n) + "\n"
	_, err := config.Parse("w.yaml", []byte(y))
	if err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Fatalf("err = %v, want one about aliases", err)
	}
	// yaml.v3's own bound, on what it decodes through aliases.
	y = "mcp_servers:\n  - &m\n    name: s\n    command: x\n    args: [&s a" + strings.Repeat(", *s", 100) + "]\n" +
		"  - *m" + strings.Repeat("\n  - *m", 100) + "\n"
	_, err = config.Parse("w.yaml", []byte(y))
	if want := "w.yaml: the aliases (*name) repeat too many values: write the values out, or use fewer aliases"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}
