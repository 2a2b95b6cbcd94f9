package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/config"
)

func TestConnFilesIdentical(t *testing.T) {
	a, err := os.ReadFile("conn.go")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../toolctl/conn.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("cmd/worker/conn.go and cmd/toolctl/conn.go differ; they must stay identical")
	}
}

// TestConnPrecedence: flag beats environment beats the config file, and an
// authentication given on the command line replaces the file's.
func TestConnPrecedence(t *testing.T) {
	file := config.NATS{URLs: []string{"nats://file:4222"}, User: "fileuser", Password: "filepw", TLS: config.TLS{CA: "file-ca.pem"}}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		withEnv bool
		want    config.NATS
		sources map[string]string
	}{
		{"file only", nil, nil, true, file, map[string]string{}},
		{"env URL", nil, map[string]string{"NATS_URL": "nats://env:1"}, true,
			config.NATS{URLs: []string{"nats://env:1"}, User: "fileuser", Password: "filepw", TLS: config.TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.urls": "env NATS_URL"}},
		{"flag beats env", []string{"--nats", "a:1, b:2"}, map[string]string{"NATS_URL": "nats://env:1"}, true,
			config.NATS{URLs: []string{"a:1", "b:2"}, User: "fileuser", Password: "filepw", TLS: config.TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.urls": "flag --nats"}},
		{"env ignored without withEnv", nil, map[string]string{"NATS_URL": "nats://env:1"}, false, file, map[string]string{}},
		{"token replaces the file's user", nil, map[string]string{"NATS_TOKEN": "tok"}, true,
			config.NATS{URLs: []string{"nats://file:4222"}, Token: "tok", TLS: config.TLS{CA: "file-ca.pem"}},
			map[string]string{"nats.token": "env NATS_TOKEN"}},
		{"TLS alone keeps the file's auth", []string{"--tls-ca", "flag-ca.pem"}, nil, true,
			config.NATS{URLs: []string{"nats://file:4222"}, User: "fileuser", Password: "filepw", TLS: config.TLS{CA: "flag-ca.pem"}},
			map[string]string{"nats.tls.ca": "flag --tls-ca"}},
		{"empty --nats", []string{"--nats", ""}, nil, true,
			config.NATS{URLs: []string{""}, User: "fileuser", Password: "filepw", TLS: config.TLS{CA: "file-ca.pem"}},
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
			var c connFlags
			c.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			n := file
			n.URLs = slices.Clone(file.URLs)
			sources := c.apply(fs, &n, tt.withEnv)
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
