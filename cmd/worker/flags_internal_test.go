package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEmbeddedFlagsWithNATS: a flag of the embedded server given with
// NATS servers to join (by flag, environment or file) is a contradiction
// the worker names, not a flag it ignores.
func TestEmbeddedFlagsWithNATS(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("port: 4222\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(file, []byte("nats:\n  urls: [nats://10.0.0.1:4222]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_URL", "")
	load := func(args ...string) error {
		f, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		_, err = loadConfig(f)
		return err
	}
	for _, embedded := range [][]string{{"--listen", "127.0.0.1:5222"}, {"--store-dir", dir}, {"--server-config", conf}, {"--insecure"}} {
		for _, nats := range [][]string{{"--nats", "nats://10.0.0.1:4222"}, {"--config", file}} {
			err := load(append(nats, embedded...)...)
			if err == nil || !strings.Contains(err.Error(), "flag "+embedded[0]) || !strings.Contains(err.Error(), "embedded") {
				t.Errorf("%v %v: %v", nats, embedded, err)
			}
		}
		if err := load(embedded...); err != nil && strings.Contains(err.Error(), "flag "+embedded[0]) {
			t.Errorf("%v alone: %v", embedded, err)
		}
	}
	t.Setenv("NATS_URL", "nats://10.0.0.1:4222")
	if err := load("--listen", "127.0.0.1:5222"); err == nil || !strings.Contains(err.Error(), "env NATS_URL") {
		t.Errorf("--listen with NATS_URL: %v", err)
	}
}

// TestDurationFlagWithoutUnit: a duration flag given a number without a
// unit (--grace 5) says what a duration looks like, as the config file
// does, rather than "parse error"; the help still names it a duration.
func TestDurationFlagWithoutUnit(t *testing.T) {
	var errb strings.Builder
	if _, err := parseFlags([]string{"--grace", "5"}, &errb); err == nil {
		t.Fatal("--grace 5 accepted")
	}
	if got := errb.String(); !strings.Contains(got, `invalid value "5" for flag -grace: want a duration such as 30s, 1m30s or 2h`) {
		t.Errorf("--grace 5 says:\n%s", got)
	}
	f, err := parseFlags([]string{"--grace", "1m30s"}, io.Discard)
	if err != nil || f.grace != 90*time.Second {
		t.Fatalf("--grace 1m30s: %v, %v", f, err)
	}
	errb.Reset()
	parseFlags([]string{"-h"}, &errb)
	if got := errb.String(); !strings.Contains(got, "-grace duration\n") {
		t.Errorf("help of --grace:\n%s", got)
	}
}

// TestProbeEmpty: --probe with an empty URL (a healthcheck whose variable
// is unset: --probe "$READYZ") is bad usage; it was taken for no --probe
// and went on as a worker (here, with --check-config, "configuration OK").
func TestProbeEmpty(t *testing.T) {
	var out, errb strings.Builder
	if code := run([]string{"--probe", "", "--check-config"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--probe needs a URL") {
		t.Errorf("--probe '': exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	// Not a URL at all is bad usage too, not a failed probe (exit 1).
	out.Reset()
	errb.Reset()
	if code := run([]string{"--probe", "::"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "want a URL") {
		t.Errorf("--probe '::': exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}

// TestEmptyPathFlags: --listen, --store-dir and --workspace given an
// empty value are refused before the start (exit 2), also by
// --check-config; --listen "" started an embedded server listening
// nowhere that said it was ready, and the others failed at the start
// ("mkdir : no such file or directory").
func TestEmptyPathFlags(t *testing.T) {
	t.Setenv("NATS_URL", "")
	for _, name := range []string{"--listen", "--store-dir", "--workspace"} {
		var out, errb strings.Builder
		if code := run([]string{"--check-config", name, ""}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "flag "+name+": empty") {
			t.Errorf("%s '': exit %d\nstdout %s\nstderr %s", name, code, out.String(), errb.String())
		}
	}
}

// TestConfigEmpty: --config with an empty value (--config "$FILE" with
// FILE unset) is bad usage; it was taken for no --config and the worker
// went on with the defaults (here, with --check-config, "configuration
// OK"), without the file's permissions.
func TestConfigEmpty(t *testing.T) {
	var out, errb strings.Builder
	if code := run([]string{"--config", "", "--check-config"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--config needs a file") {
		t.Errorf("--config '': exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}

// TestIntFlagNotANumber: --kv-replicas given something else than a whole
// number says what it wants, not "parse error".
func TestIntFlagNotANumber(t *testing.T) {
	var errb strings.Builder
	if _, err := parseFlags([]string{"--kv-replicas", "three"}, &errb); err == nil {
		t.Fatal("--kv-replicas three accepted")
	}
	if got := errb.String(); !strings.Contains(got, `invalid value "three" for flag -kv-replicas: want a whole number`) {
		t.Errorf("--kv-replicas three says:\n%s", got)
	}
	if f, err := parseFlags([]string{"--kv-replicas", "3"}, io.Discard); err != nil || f.kvReplicas != 3 {
		t.Fatalf("--kv-replicas 3: %v, %v", f, err)
	}
}

// TestEmptyQueueFlag: --queue "" (--queue "$QUEUE" with QUEUE unset) was
// "configuration OK" with queue "": the worker then served in the
// default queue group (the bus's default) while it logged queue "" and
// checked the permissions of the fleet's workers of queue group "",
// that is of none.
func TestEmptyQueueFlag(t *testing.T) {
	t.Setenv("NATS_URL", "")
	var out, errb strings.Builder
	if code := run([]string{"--check-config", "--queue", ""}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "flag --queue: empty") {
		t.Errorf("--queue '': exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}

// TestEmptyNamingFlags: --instance "" (--instance "$HOSTNAME" with the
// variable unset), --log-level "", --log-format "" and --group-state ""
// took the defaults silently, where --queue "" is refused: a fleet's
// worker named by a variable started under a random name.
func TestEmptyNamingFlags(t *testing.T) {
	t.Setenv("NATS_URL", "")
	for _, name := range []string{"instance", "log-level", "log-format", "group-state"} {
		var out, errb strings.Builder
		if code := run([]string{"--check-config", "--" + name, ""}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "flag --"+name+": empty") {
			t.Errorf("--%s '': exit %d\nstdout %s\nstderr %s", name, code, out.String(), errb.String())
		}
	}
}

// TestEmptyServerConfigFlag: --server-config "" (--server-config "$CONF"
// with CONF unset) over a config file's embedded.server_config was
// "configuration OK" and started the embedded server without that
// file's roles: without authentication.
func TestEmptyServerConfigFlag(t *testing.T) {
	t.Setenv("NATS_URL", "")
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("authorization { token: s3cr3t }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(file, []byte("embedded:\n  server_config: server.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := run([]string{"--check-config", "--config", file, "--server-config", ""}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "flag --server-config: empty") {
		t.Errorf("--server-config '': exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}

// TestConnFilesNotWhatTheySay: a CA file that holds no certificate, a
// credentials file without an nkey seed and a certificate without a
// matching key are an invalid configuration (exit 2, also for
// --check-config), as an nkey file without a seed is; they were "OK",
// and the worker then retried connecting for two minutes ("failed to
// parse root certificate").
func TestConnFilesNotWhatTheySay(t *testing.T) {
	t.Setenv("NATS_URL", "")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-ca", junk}, "nats.tls.ca"},
		{[]string{"--creds", junk}, "nats.credentials"},
		{[]string{"--tls-cert", junk, "--tls-key", junk}, "nats.tls.cert"},
	} {
		var out, errb strings.Builder
		args := append([]string{"--check-config", "--nats", "nats://127.0.0.1:1"}, tt.args...)
		if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", tt.args, code, out.String(), errb.String())
		}
	}
}

// TestOutputLostFails: --version and --check-config whose answer could
// not be written (stdout to a full disk) exited 0, so a script checking
// a configuration before a deployment read a pass that was never
// printed.
func TestOutputLostFails(t *testing.T) {
	t.Setenv("NATS_URL", "")
	for _, args := range [][]string{{"--version"}, {"--check-config"}} {
		var errb strings.Builder
		if code := run(args, fullWriter{}, &errb); code != exitFailed || !strings.Contains(errb.String(), "no space left") {
			t.Errorf("%v to a full stdout: exit %d\nstderr %s", args, code, errb.String())
		}
	}
}

// fullWriter is a stdout on a full disk.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }
