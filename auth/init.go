package auth

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/regularfile"
)

// Files Init writes into its directory besides the seeds.
const (
	// ServerConfigFile is the nats-server configuration.
	ServerConfigFile = "server.conf"
	// GatewayTokensFile holds a bearer token per caller identity for the
	// MCP gateway (toolctl mcp serve --tokens): lines "IDENTITY TOKEN".
	GatewayTokensFile = "gateway-tokens"
)

// User is one user of the configuration: a role (and, for a caller, its
// identity), its nkey's public key and the file holding its seed.
type User struct {
	Role     string
	Identity string // callers only
	Public   string
	SeedFile string
}

// Setup is what Init wrote.
type Setup struct {
	// ServerConfig is the nats-server configuration file: an
	// authorization block with every user and its permissions.
	ServerConfig string
	// GatewayTokens is the gateway's bearer-token file.
	GatewayTokens string
	// Users, the operator, the worker and the gateway first, then the
	// callers by identity.
	Users []User
}

// SeedFile is the name of a user's seed file in Init's directory:
// operator.nk, worker.nk, gateway.nk, caller-<identity>.nk.
func SeedFile(role, identity string) string {
	if role == RoleCaller {
		return "caller-" + identity + ".nk"
	}
	return role + ".nk"
}

// Init writes into dir one nkey seed file per user (mode 0600) and the
// server configuration (ServerConfigFile) that admits them with their
// roles' permissions: an operator, a worker (shared by every worker of the
// fleet), a gateway, and a caller per identity; and the gateway's bearer
// tokens, one per caller identity (GatewayTokensFile, mode 0600). It is
// idempotent: seeds and tokens already in dir are kept (so running it
// again with more identities adds callers and invalidates nobody), and the
// callers of earlier runs stay.
func Init(dir string, callers []string) (*Setup, error) {
	for _, id := range callers {
		if !wire.ValidIdentity(id) {
			return nil, fmt.Errorf("auth: invalid caller identity %q: it must be 1-%d characters of [A-Za-z0-9_-]", id, wire.MaxCallIDLen)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	earlier, err := filepath.Glob(filepath.Join(dir, SeedFile(RoleCaller, "*")))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	for _, f := range earlier {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "caller-"), ".nk")
		if wire.ValidIdentity(id) {
			callers = append(callers, id)
		}
	}
	slices.Sort(callers)
	callers = slices.Compact(callers)

	setup := &Setup{ServerConfig: filepath.Join(dir, ServerConfigFile), GatewayTokens: filepath.Join(dir, GatewayTokensFile)}
	var conf bytes.Buffer
	conf.WriteString(confHeader)
	add := func(role, identity string, p Permissions) error {
		u := User{Role: role, Identity: identity, SeedFile: filepath.Join(dir, SeedFile(role, identity))}
		if u.Public, err = ensureSeed(u.SeedFile); err != nil {
			return err
		}
		setup.Users = append(setup.Users, u)
		writeUser(&conf, u, p)
		return nil
	}
	if err := add(RoleOperator, "", Operator()); err != nil {
		return nil, err
	}
	if err := add(RoleWorker, "", Worker()); err != nil {
		return nil, err
	}
	if err := add(RoleGateway, "", Gateway()); err != nil {
		return nil, err
	}
	for _, id := range callers {
		p, err := Caller(id)
		if err != nil {
			return nil, err
		}
		if err := add(RoleCaller, id, p); err != nil {
			return nil, err
		}
	}
	conf.WriteString("  ]\n}\n")
	if err := writeFile(setup.ServerConfig, conf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := ensureTokens(setup.GatewayTokens, callers); err != nil {
		return nil, err
	}
	return setup, nil
}

// ensureTokens keeps the tokens in path and adds one for every identity
// that has none.
func ensureTokens(path string, identities []string) error {
	tokens, err := ReadTokens(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	var b bytes.Buffer
	b.WriteString("# toolbus MCP gateway bearer tokens (toolctl mcp serve --tokens): IDENTITY TOKEN per line.\n")
	for token, id := range tokens {
		have[id] = true
		fmt.Fprintf(&b, "%s %s\n", id, token)
	}
	for _, id := range identities {
		if !have[id] {
			fmt.Fprintf(&b, "%s %s\n", id, rand.Text())
		}
	}
	return writeFile(path, b.Bytes(), 0o600)
}

// MaxTokensFileBytes is the largest bearer-token file ReadTokens reads:
// some ten thousand callers.
const MaxTokensFileBytes = 1 << 20

// maxSeedFileBytes is the largest seed file Init reads: a seed is 58
// characters.
const maxSeedFileBytes = 4 << 10

// readFile reads path, a regular file of at most limit bytes; its error
// names path once and keeps fs.ErrNotExist.
func readFile(path string, limit int64) ([]byte, error) {
	data, err := regularfile.Read(path, limit)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("auth: %s: %w", path, err)
	}
	return data, nil
}

// MinTokenLen is the shortest bearer token a tokens file may hold (the
// MCP gateway refuses shorter ones).
const MinTokenLen = 16

// ReadTokens reads a bearer-token file (lines "IDENTITY TOKEN"; blank
// lines and lines starting with # are skipped) into token → identity.
// The file must be a regular file of at most MaxTokensFileBytes: a named
// pipe or a device is refused, not waited on or read without end.
func ReadTokens(path string) (map[string]string, error) {
	data, err := readFile(path, MaxTokensFileBytes)
	if err != nil {
		return nil, err
	}
	tokens := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case len(f) != 2:
			return nil, fmt.Errorf("auth: %s:%d: want IDENTITY TOKEN", path, i+1)
		case !wire.ValidIdentity(f[0]):
			return nil, fmt.Errorf("auth: %s:%d: identity %s: want one token of [A-Za-z0-9_-], at most %d bytes", path, i+1, wire.Quote(f[0]), wire.MaxCallIDLen)
		case len(f[1]) < MinTokenLen:
			return nil, fmt.Errorf("auth: %s:%d: the token of %s has %d characters, too easy to guess: use at least %d", path, i+1, f[0], len(f[1]), MinTokenLen)
		}
		if _, dup := tokens[f[1]]; dup {
			return nil, fmt.Errorf("auth: %s:%d: a token given twice", path, i+1)
		}
		tokens[f[1]] = f[0]
	}
	return tokens, nil
}

const confHeader = `# toolbus roles: one nkey user per role, written by ` + "`toolctl auth init`" + `.
# The seeds are the *.nk files beside this file; give each process its own:
#   workers   --server-config server.conf (embedded server) or nats-server -c server.conf,
#             and --nkey worker.nk
#   operator  toolctl --nkey operator.nk (approve, mode, allow, mcp-headers, top, everything)
#   callers   toolctl --nkey caller-ID.nk --identity ID (and agents' own clients)
#   gateway   toolctl --nkey gateway.nk mcp serve --tokens gateway-tokens (MCP clients by bearer token)
# Running toolctl auth init again keeps these keys and adds callers; the
# server reads this file when it starts (nats-server: --signal reload) and
# the gateway its tokens, so restart them to admit new callers.
authorization {
  users = [
`

// writeUser appends one user to the configuration. Subjects are quoted:
// "$" would otherwise start a variable reference.
func writeUser(b *bytes.Buffer, u User, p Permissions) {
	name := u.Role
	if u.Identity != "" {
		name += " " + u.Identity
	}
	fmt.Fprintf(b, "    # %s\n    {\n      nkey: %q\n      permissions: {\n", name, u.Public)
	list := func(what string, subjects []string) {
		fmt.Fprintf(b, "        %s: { allow: [\n", what)
		for _, s := range subjects {
			fmt.Fprintf(b, "          %s\n", strconv.Quote(s))
		}
		b.WriteString("        ] }\n")
	}
	list("publish", p.Publish)
	list("subscribe", p.Subscribe)
	b.WriteString("      }\n    }\n")
}

// ensureSeed reads the user seed in path, or creates one there, and
// returns its public key.
func ensureSeed(path string) (string, error) {
	seed, err := readFile(path, maxSeedFileBytes)
	switch {
	case err == nil:
		kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
		if err != nil {
			return "", fmt.Errorf("auth: %s: %w", path, err)
		}
		pub, err := kp.PublicKey()
		if err == nil && !nkeys.IsValidPublicUserKey(pub) {
			err = errors.New("not a user seed")
		}
		if err != nil {
			return "", fmt.Errorf("auth: %s: %w", path, err)
		}
		return pub, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	if seed, err = kp.Seed(); err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	if err := writeFile(path, append(seed, '\n'), 0o600); err != nil {
		return "", err
	}
	return kp.PublicKey()
}

// writeFile replaces path atomically.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}
