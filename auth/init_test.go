package auth_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/internal/ostest"
)

// TestInit: the configuration loads in nats-server with every user and
// its role's permissions, seeds are private, and a second run keeps the
// keys and adds callers.
func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	first, err := auth.Init(dir, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := auth.Init(dir, []string{"bob", "alice"})
	if err != nil {
		t.Fatal(err)
	}
	roles := func(s *auth.Setup) map[string]string {
		m := map[string]string{}
		for _, u := range s.Users {
			m[u.Role+" "+u.Identity] = u.Public
			fi, err := os.Stat(u.SeedFile)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("seed %s: %v, %v", u.SeedFile, fi.Mode(), err)
			}
		}
		return m
	}
	a, b := roles(first), roles(second)
	if len(a) != 4 || len(b) != 5 {
		t.Fatalf("users: first %v, second %v", a, b)
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: key changed from %s to %s on the second run", k, v, b[k])
		}
	}

	opts, err := server.ProcessConfigFile(second.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Nkeys) != 5 {
		t.Fatalf("%d nkey users in the server configuration", len(opts.Nkeys))
	}
	alice, err := auth.Caller("alice")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]auth.Permissions{b["operator "]: auth.Operator(), b["worker "]: auth.Worker(), b["gateway "]: auth.Gateway(), b["caller alice"]: alice}
	for _, u := range opts.Nkeys {
		p, ok := want[u.Nkey]
		if !ok {
			continue
		}
		if !slices.Equal(u.Permissions.Publish.Allow, p.Publish) || !slices.Equal(u.Permissions.Subscribe.Allow, p.Subscribe) {
			t.Errorf("user %s: publish %v subscribe %v; want %v %v", u.Nkey, u.Permissions.Publish.Allow, u.Permissions.Subscribe.Allow, p.Publish, p.Subscribe)
		}
	}

	tokens, err := auth.ReadTokens(second.GatewayTokens)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for token, id := range tokens {
		ids[id] = token
	}
	if len(ids) != 2 || len(ids["alice"]) < 16 || len(ids["bob"]) < 16 {
		t.Fatalf("gateway tokens %v", tokens)
	}
	if fi, err := os.Stat(second.GatewayTokens); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, %v", fi.Mode(), err)
	}
	third, err := auth.Init(dir, []string{"carol"})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := auth.ReadTokens(third.GatewayTokens); again[ids["alice"]] != "alice" || len(again) != 3 {
		t.Errorf("tokens after a third run: %v", again)
	}

	if _, err := auth.Init(dir, []string{"not ok"}); err == nil {
		t.Error("an identity with a space was accepted")
	}
	if _, err := auth.Caller("a.b"); err == nil {
		t.Error("an identity with a dot was accepted")
	}
}

// A bearer-token file's bad line says what is wrong with it: an identity
// no caller can have, a token the gateway would refuse as too short
// (before, "want IDENTITY TOKEN" for the one, and the gateway's own error,
// exit 1, for the other).
func TestReadTokensSaysWhy(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"alice.smith 0123456789abcdefghij\n", `identity "alice.smith"`},
		{"alice short\n", "5 characters"},
		{"alice\n", "want IDENTITY TOKEN"},
		{"alice a b\n", "want IDENTITY TOKEN"},
	} {
		path := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.ReadTokens(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path+":1:") {
			t.Errorf("ReadTokens of %q: %v, want an error at line 1 saying %s", tc.file, err, tc.want)
		}
	}
}

// A bearer-token file or a seed that is not a regular file of bounded
// size is refused at once, naming the file: a named pipe no one writes
// hung toolctl mcp serve --tokens and toolctl auth init in the open, and
// /dev/zero or a huge file was read whole into memory.
func TestReadTokensRefusesOddFiles(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 8<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := ostest.Mkfifo(t, fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, tc := range []struct{ path, want string }{
		{huge, "over the limit"},
		{dir, "is a directory"},
		{fifo, "a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "a character device, not a regular file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := auth.ReadTokens(tc.path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("ReadTokens(%s): %v, want an error naming it and saying %q", tc.path, err, tc.want)
			}
		case <-time.After(time.Minute): // a guard: it returns at once
			unblockFIFO(t, fifo)
			t.Fatalf("ReadTokens(%s) still reads after a minute", tc.path)
		}
	}
}

func TestInitRefusesASeedThatIsAPipe(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, auth.SeedFile(auth.RoleWorker, ""))
	if err := ostest.Mkfifo(t, seed, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := auth.Init(dir, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a named pipe (FIFO), not a regular file") || !strings.Contains(err.Error(), seed) {
			t.Fatalf("Init with %s a FIFO: %v, want an error naming it as a named pipe", seed, err)
		}
	case <-time.After(time.Minute): // a guard: it returns at once
		unblockFIFO(t, seed)
		t.Fatalf("Init still reads %s after a minute", seed)
	}
	if fi, err := os.Lstat(seed); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone or changed: %v, %v", fi, err)
	}
}

// unblockFIFO opens the FIFO for reading and writing and closes it, so
// that a reader stuck opening it returns.
func unblockFIFO(t *testing.T, path string) {
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
	}
}
