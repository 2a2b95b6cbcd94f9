package main_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/toolbus/toolbus/auth"
)

// composeFile is the part of docker-compose.yml the test reads.
type composeFile struct {
	Services map[string]struct {
		Image       string   `yaml:"image"`
		Build       any      `yaml:"build"`
		Command     []string `yaml:"command"`
		Volumes     []string `yaml:"volumes"`
		Environment any      `yaml:"environment"` // a list of K=V or a map
		StopGrace   string   `yaml:"stop_grace_period"`
		Deploy      struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
	} `yaml:"services"`
}

// TestCompose keeps docker-compose.yml and the Dockerfile honest: every
// worker command line is accepted by `worker --check-config`, the workers
// reach every NATS node of the compose cluster, and the KV replicas fit
// the cluster.
func TestCompose(t *testing.T) {
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}

	// The services mount ./toolbus-auth, made by toolctl auth init, at /auth.
	authDir := filepath.Join(t.TempDir(), "auth")
	if _, err := auth.Init(authDir, []string{"agent-1"}); err != nil {
		t.Fatal(err)
	}
	mountsAuth := func(name string, volumes []string) {
		if !slices.Contains(volumes, "./toolbus-auth:/auth:ro") {
			t.Errorf("service %s does not mount ./toolbus-auth at /auth (read-only): %v", name, volumes)
		}
	}

	natsNodes := map[string]bool{}
	for name, s := range cf.Services {
		if strings.HasPrefix(s.Image, "nats:") {
			if !slices.Contains(s.Command, "--jetstream") || !slices.Contains(s.Command, "--cluster_name") || !slices.Contains(s.Command, "--routes") {
				t.Errorf("NATS service %s is not a JetStream cluster node: %v", name, s.Command)
			}
			if flagValue(s.Command, "-c") != "/auth/server.conf" {
				t.Errorf("NATS service %s does not run with the roles (-c /auth/server.conf): %v", name, s.Command)
			}
			mountsAuth(name, s.Volumes)
			natsNodes[name] = true
		}
	}
	if len(natsNodes) != 3 {
		t.Errorf("%d NATS services, want a 3-node cluster", len(natsNodes))
	}

	workers := 0
	for name, s := range cf.Services {
		if s.Build == nil {
			continue
		}
		workers++
		t.Run(name, func(t *testing.T) {
			if s.Deploy.Replicas < 2 {
				t.Errorf("worker service %s has %d replicas, want several", name, s.Deploy.Replicas)
			}
			mountsAuth(name, s.Volumes)
			if flagValue(s.Command, "--nkey") != "/auth/worker.nk" {
				t.Errorf("worker service %s does not connect with the worker role (--nkey /auth/worker.nk)", name)
			}
			env := cleanEnv(t, environment(t, s.Environment)...)
			args := []string{"--check-config"}
			for _, a := range s.Command {
				if rest, ok := strings.CutPrefix(a, "/auth/"); ok {
					a = filepath.Join(authDir, rest)
				}
				args = append(args, a)
			}
			p := startProc(t, env, workerBin, args...)
			if code := p.exit(t); code != 0 {
				t.Fatalf("worker --check-config %s: exit %d\n%s", strings.Join(s.Command, " "), code, p.stderr)
			}

			urls := flagValue(s.Command, "--nats")
			if urls == "" {
				t.Fatalf("worker service %s has no --nats: it would start its own server", name)
			}
			reached := map[string]bool{}
			for _, raw := range strings.Split(urls, ",") {
				u, err := url.Parse(raw)
				if err != nil || !natsNodes[u.Hostname()] {
					t.Errorf("--nats %s: %q is not a NATS service of the compose file", urls, raw)
					continue
				}
				reached[u.Hostname()] = true
			}
			if len(reached) != len(natsNodes) {
				t.Errorf("--nats %s reaches %d of the %d NATS nodes", urls, len(reached), len(natsNodes))
			}
			grace, stop := 30*time.Second, 10*time.Second // the worker's and docker's defaults
			if v := flagValue(s.Command, "--grace"); v != "" {
				if grace, err = time.ParseDuration(v); err != nil {
					t.Fatal(err)
				}
			}
			if s.StopGrace != "" {
				if stop, err = time.ParseDuration(s.StopGrace); err != nil {
					t.Fatal(err)
				}
			}
			// After the grace a drain may take bus.WorkerOptions.AbandonAfter (2s) more.
			if grace+3*time.Second > stop {
				t.Errorf("--grace %v leaves no time before docker's SIGKILL at stop_grace_period %v", grace, stop)
			}
			replicas, err := strconv.Atoi(flagValue(s.Command, "--kv-replicas"))
			if err != nil || replicas != len(natsNodes) {
				t.Errorf("--kv-replicas %q, want %d (one per node, so any node can fail)", flagValue(s.Command, "--kv-replicas"), len(natsNodes))
			}
		})
	}
	if workers == 0 {
		t.Fatal("no worker service (one with build:) in docker-compose.yml")
	}

	// The keys stay out of the image's build context: the build stage
	// copies the whole context (COPY . .), and worker.nk, handed to the
	// image's user with chown as the README says, is no longer readable by
	// whoever runs the build, which would fail reading it.
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(strings.Split(string(ignore), "\n"), func(l string) bool {
		l = strings.Trim(strings.TrimSpace(l), "/")
		return l == "toolbus-auth" || l == "**/toolbus-auth"
	}) {
		t.Errorf(".dockerignore does not exclude toolbus-auth/: the keys would go into the build context")
	}

	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/worker", "USER nonroot", "ENTRYPOINT"} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// flagValue returns the value after name in args, or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// environment turns a compose environment (list or map) into K=V pairs.
func environment(t *testing.T, e any) []string {
	t.Helper()
	switch e := e.(type) {
	case nil:
		return nil
	case []any:
		var out []string
		for _, kv := range e {
			out = append(out, kv.(string))
		}
		return out
	case map[string]any:
		var out []string
		for k, v := range e {
			out = append(out, k+"="+strings.TrimSpace(yamlScalar(v)))
		}
		return out
	}
	t.Fatalf("environment of type %T", e)
	return nil
}

func yamlScalar(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
