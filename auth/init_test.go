package auth_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/auth"
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
