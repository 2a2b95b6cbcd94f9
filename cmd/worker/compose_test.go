package main_test

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/internal/natstest"
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
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
	} `yaml:"services"`
}

// TestCompose keeps docker-compose.yml and the Dockerfile honest: every
// worker command line is accepted by `worker --check-config`, the workers
// reach every NATS node of the compose cluster, the KV replicas fit
// the cluster, and each worker's healthcheck probes its liveness
// (composeHealthcheck).
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
			composeHealthcheck(t, s.Healthcheck.Test, flagValue(s.Command, "--http"))
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

// composeHealthcheck: the compose healthcheck probed /readyz, so a worker
// waiting for its cluster (up to 2 minutes, as under docker compose up)
// was unhealthy and could be restarted by its orchestrator, as could every
// worker while NATS was away. A healthcheck says whether to restart the
// container: it probes liveness. test is the healthcheck's command, which
// must probe the worker's own --http address (httpAddr); run against a
// worker that waits for a NATS server that does not answer, it succeeds.
func composeHealthcheck(t *testing.T, test []string, httpAddr string) {
	t.Helper()
	if len(test) != 4 || test[0] != "CMD" || test[1] != "/usr/local/bin/worker" || test[2] != "--probe" {
		t.Fatalf("healthcheck test %q, want [CMD /usr/local/bin/worker --probe URL] (the image has no shell or curl)", test)
	}
	u, err := url.Parse(test[3])
	if err != nil {
		t.Fatalf("healthcheck URL %q: %v", test[3], err)
	}
	if httpAddr == "" || u.Host != httpAddr {
		t.Fatalf("healthcheck probes %s, not the worker's --http %q", u.Host, httpAddr)
	}
	// The worker as the container runs it while its cluster does not
	// answer yet: the healthcheck's probe, at the test's address.
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	p := startProc(t, cleanEnv(t), workerBin, "--log-format", "json",
		"--nats", fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePort(t)), "--http", addr)
	natstest.WaitFor(t, "the worker's endpoint to listen", func() bool {
		code, _ := natstest.HTTPGet("http://" + addr + "/metrics")
		return code == 200
	})
	if code, body := natstest.HTTPGet("http://" + addr + "/readyz"); code != 503 {
		t.Fatalf("/readyz of a worker waiting for NATS: %d %q, want 503", code, body)
	}
	probe := *u
	probe.Host = addr
	out, err := exec.Command(workerBin, "--probe", probe.String()).CombinedOutput()
	if err != nil {
		t.Errorf("the healthcheck (worker --probe %s) fails on a live worker waiting for NATS, which its orchestrator would restart: %v\n%s", test[3], err, out)
	}
	if strings.Contains(p.stderr.String(), `"toolbus worker ready"`) {
		t.Fatalf("the worker is ready with no NATS server:\n%s", p.stderr)
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
