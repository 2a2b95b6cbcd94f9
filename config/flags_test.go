package config

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConnPrecedence: flag beats environment beats the config file, and an
// authentication given on the command line replaces the file's.
func TestConnPrecedence(t *testing.T) {
	file := NATS{URLs: []string{"nats://file:4222"}, User: "fileuser", Password: "filepw", TLS: TLS{CA: "file-ca.pem"}}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		withEnv bool
		want    NATS
		sources map[string]string
	}{
		{"file only", nil, nil, true, file, map[string]string{}},
		{"env URL", nil, map[string]string{"NATS_URL": "nats://env:1"}, true,
			NATS{URLs: []string{"nats://env:1"}, User: "fileuser", Password: "filepw", TLS: TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.urls": "env NATS_URL"}},
		{"flag beats env", []string{"--nats", "a:1, b:2"}, map[string]string{"NATS_URL": "nats://env:1"}, true,
			NATS{URLs: []string{"a:1", "b:2"}, User: "fileuser", Password: "filepw", TLS: TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.urls": "flag --nats"}},
		{"env ignored without withEnv", nil, map[string]string{"NATS_URL": "nats://env:1"}, false, file, map[string]string{}},
		{"token replaces the file's user", nil, map[string]string{"NATS_TOKEN": "tok"}, true,
			NATS{URLs: []string{"nats://file:4222"}, Token: "tok", TLS: TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.token": "env NATS_TOKEN"}},
		{"TLS alone keeps the file's auth", []string{"--tls-ca", "flag-ca.pem"}, nil, true,
			NATS{URLs: []string{"nats://file:4222"}, User: "fileuser", Password: "filepw", TLS: TLS{CA: "flag-ca.pem"}},
			map[string]string{"nats.tls.ca": "flag --tls-ca"}},
		{"empty --nats", []string{"--nats", ""}, nil, true,
			NATS{URLs: []string{""}, User: "fileuser", Password: "filepw", TLS: TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.urls": "flag --nats"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range connSpec {
				t.Setenv(s.env, "")
			}
			t.Setenv("NATS_URL", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var c ConnFlags
			c.Register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			n := file
			n.URLs = slices.Clone(file.URLs)
			sources := c.Apply(fs, &n, tt.withEnv)
			if !slices.Equal(n.URLs, tt.want.URLs) || n.User != tt.want.User || n.Password != tt.want.Password ||
				n.Token != tt.want.Token || n.TLS != tt.want.TLS {
				t.Errorf("got %+v, want %+v", n, tt.want)
			}
			if len(sources) != len(tt.sources) {
				t.Errorf("sources %v, want %v", sources, tt.sources)
			}
			for k, v := range tt.sources {
				if sources[k] != v {
					t.Errorf("sources %v, want %v", sources, tt.sources)
				}
			}
		})
	}
}

// TestConnFlagsNoIdentity: a program that calls no tools (the worker)
// offers no --identity, and neither TOOLBUS_IDENTITY nor the flag set it.
func TestConnFlagsNoIdentity(t *testing.T) {
	t.Setenv("TOOLBUS_IDENTITY", "alice")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := ConnFlags{NoIdentity: true}
	c.Register(fs)
	if fs.Lookup("identity") != nil {
		t.Error("--identity registered with NoIdentity")
	}
	if err := fs.Parse([]string{"--identity", "bob"}); err == nil {
		t.Error("--identity accepted with NoIdentity")
	}
	n := NATS{}
	if sources := c.Apply(fs, &n, true); n.Identity != "" || sources["nats.identity"] != "" {
		t.Errorf("identity %q from %q, want none", n.Identity, sources["nats.identity"])
	}
}

func TestHasCredentials(t *testing.T) {
	for _, tt := range []struct {
		n    NATS
		want bool
	}{
		{NATS{}, false},
		{NATS{URLs: []string{"nats://h:4222"}, TLS: TLS{CA: "ca.pem"}, Identity: "alice"}, false},
		{NATS{NKeySeed: "w.nk"}, true},
		{NATS{Credentials: "w.creds"}, true},
		{NATS{User: "u"}, true},
		{NATS{Token: "t"}, true},
		{NATS{TLS: TLS{Cert: "c.pem", Key: "k.pem"}}, true},
		{NATS{URLs: []string{"nats://h:1", "nats://u:p@h:2"}}, true},
	} {
		if got := tt.n.HasCredentials(); got != tt.want {
			t.Errorf("%+v: HasCredentials %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestIntVar: an int flag given something else than a whole number says
// what it wants, not "parse error" or "value out of range"; the help
// keeps the flag's name for its value and its default.
func TestIntVar(t *testing.T) {
	var errb strings.Builder
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&errb)
	var n int
	IntVar(fs, &n, "n", 3, "at most `count` things")
	for in, want := range map[string]string{
		"x":                    `invalid value "x" for flag -n: want a whole number` + "\n",
		"1.5":                  `invalid value "1.5" for flag -n: want a whole number` + "\n",
		"99999999999999999999": `invalid value "99999999999999999999" for flag -n: want a whole number, not one this large` + "\n",
	} {
		errb.Reset()
		if err := fs.Parse([]string{"-n", in}); err == nil || !strings.HasPrefix(errb.String(), want) {
			t.Errorf("-n %s: %v\n%s", in, err, errb.String())
		}
	}
	if err := fs.Parse([]string{"-n", "-2"}); err != nil || n != -2 {
		t.Errorf("-n -2: %d, %v", n, err)
	}
	errb.Reset()
	fs.PrintDefaults()
	if got := errb.String(); !strings.Contains(got, "-n count\n") || !strings.Contains(got, "(default 3)") {
		t.Errorf("help:\n%s", got)
	}
}

// TestParseFlags: a mistyped flag printed the whole usage, every flag of
// the command, with the error lost among them; now the error comes alone
// with where the flags are listed, and the flag meant when it is near
// one; -h prints them all.
func TestParseFlags(t *testing.T) {
	cases := []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"--lisen", "x"}, []string{"cmd: flag provided but not defined: -lisen (did you mean --listen?)", "see cmd -h for the flags"}, "Usage"},
		{[]string{"--bogus"}, []string{"flag provided but not defined: -bogus\n", "see cmd -h"}, "did you mean"},
		{[]string{"--count", "many"}, []string{`invalid value "many" for flag -count`, "see cmd -h"}, "Usage"},
		{[]string{"-h"}, []string{"Usage", "-listen", "-count"}, "see cmd -h"},
	}
	for _, c := range cases {
		var out strings.Builder
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: cmd [flags]"); fs.PrintDefaults() }
		fs.String("listen", "", "where")
		fs.Int("count", 0, "how many")
		if err := ParseFlags(fs, c.args, "cmd -h"); err == nil {
			t.Errorf("%q: no error", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: output %q lacks %q", c.args, out.String(), w)
			}
		}
		if strings.Contains(out.String(), c.not) {
			t.Errorf("%q: output %q has %q", c.args, out.String(), c.not)
		}
	}
	var out strings.Builder
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(&out)
	x := fs.String("x", "", "")
	if err := ParseFlags(fs, []string{"-x", "1", "arg"}, "cmd -h"); err != nil || *x != "1" || fs.Arg(0) != "arg" || out.Len() != 0 {
		t.Errorf("good flags: %v, %q, %q, output %q", err, *x, fs.Args(), out.String())
	}
}

// TestAttributeParentKey: an error about two keys (two ways to
// authenticate; a certificate without its key) names the flag or the
// variable that set one, not "config", which no file was.
func TestAttributeParentKey(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--tls-cert", "testdata/certs/ca.pem"}, nil, "flag --tls-cert: nats.tls.cert: "},
		{nil, map[string]string{"NATS_KEY": "testdata/certs/ca.pem"}, "env NATS_KEY: nats.tls.key: "},
		{[]string{"--token", "t", "--user", "u", "--password", "p"}, nil, "flag --token: nats.token: more than one way"},
		{[]string{"--user", "u", "--password", "p"}, map[string]string{"NATS_TOKEN": "t"}, "env NATS_TOKEN: nats.token: more than one way"},
	} {
		for _, s := range connSpec {
			t.Setenv(s.env, "")
		}
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var c ConnFlags
		c.Register(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		cfg := Default()
		sources := c.Apply(fs, &cfg.NATS, true)
		err := Attribute(cfg.Validate(), sources)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v %v: got %v, want %q…", tt.args, tt.env, err, tt.want)
		}
	}
}

// TestDurationVarTooLarge: a duration flag given one past what a duration
// holds (292 years) says so, as an int flag does, not that it wants a
// duration such as 30s, which it was given.
func TestDurationVarTooLarge(t *testing.T) {
	var errb strings.Builder
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&errb)
	var d time.Duration
	DurationVar(fs, &d, "d", 0, "a `duration`")
	for in, want := range map[string]string{
		"5":          `invalid value "5" for flag -d: want a duration such as 30s, 1m30s or 2h` + "\n",
		"99999999h":  `invalid value "99999999h" for flag -d: want a duration such as 30s, 1m30s or 2h, not one this large` + "\n",
		"-99999999h": `invalid value "-99999999h" for flag -d: want a duration such as 30s, 1m30s or 2h, not one this large` + "\n",
	} {
		errb.Reset()
		if err := fs.Parse([]string{"-d", in}); err == nil || !strings.HasPrefix(errb.String(), want) {
			t.Errorf("-d %s: %v\n%s", in, err, errb.String())
		}
	}
}
