package config_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/toolbus/toolbus/config"
)

// startServer runs a real nats-server on a random port until the test
// ends.
func startServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// connect parses a config whose nats section is given and connects with
// its options.
func connect(t *testing.T, url, natsYAML string) error {
	t.Helper()
	cfg, err := config.Parse("w.yaml", []byte("nats:\n  urls: ['"+url+"']\n"+natsYAML))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.NATS.Options()
	if err != nil {
		return err
	}
	opts = append(opts, nats.Timeout(10*time.Second), nats.MaxReconnects(0))
	nc, err := nats.Connect(cfg.NATS.URL(), opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	return nc.Flush()
}

func TestNATSAuth(t *testing.T) {
	dir := t.TempDir()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(dir, "other.nk")
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		server server.Options
		ok     string
		bad    string
	}{
		{"user and password", server.Options{Username: "u", Password: "p"},
			"  user: u\n  password: p\n", "  user: u\n  password: wrong\n"},
		{"token", server.Options{Authorization: "t0ken"},
			"  token: t0ken\n", "  token: nope\n"},
		{"nkey seed", server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}},
			"  nkey_seed: " + seedFile + "\n", "  nkey_seed: " + otherFile + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, &tt.server)
			if err := connect(t, s.ClientURL(), tt.ok); err != nil {
				t.Errorf("right credentials: %v", err)
			}
			if err := connect(t, s.ClientURL(), tt.bad); err == nil {
				t.Error("wrong credentials were accepted")
			}
			if err := connect(t, s.ClientURL(), ""); err == nil {
				t.Error("no credentials were accepted")
			}
		})
	}
}

func TestNATSNkeySeedNotASeed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.nk")
	if err := os.WriteFile(file, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("w.yaml", []byte("nats:\n  nkey_seed: "+file+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.NATS.Options(); err == nil || !strings.Contains(err.Error(), "nats.nkey_seed") {
		t.Errorf("err = %v", err)
	}
}

// TLS with a CA and a client certificate, against a server that requires
// and verifies them.
func TestNATSTLS(t *testing.T) {
	dir := t.TempDir()
	pki := newPKI(t, dir)
	pool := x509.NewCertPool()
	pool.AddCert(pki.ca)
	s := startServer(t, &server.Options{
		TLS:       true,
		TLSVerify: true,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pki.server},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		},
	})
	url := "tls://" + s.Addr().String()
	full := "  tls:\n    ca: " + pki.caFile + "\n    cert: " + pki.clientFile + "\n    key: " + pki.clientKeyFile + "\n"
	if err := connect(t, url, full); err != nil {
		t.Fatalf("TLS with CA and client certificate: %v", err)
	}
	if err := connect(t, url, "  tls:\n    ca: "+pki.caFile+"\n"); err == nil {
		t.Error("connected without the client certificate the server requires")
	}
}

type pki struct {
	ca                                *x509.Certificate
	server                            tls.Certificate
	caFile, clientFile, clientKeyFile string
}

// newPKI makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, and writes the client side as PEM files.
func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: "127.0.0.1"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, kind string, der []byte) string {
		var b bytes.Buffer
		if err := pem.Encode(&b, &pem.Block{Type: kind, Bytes: der}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	srvDER, srvKey := leaf(2, x509.ExtKeyUsageServerAuth)
	cliDER, cliKey := leaf(3, x509.ExtKeyUsageClientAuth)
	p := pki{ca: ca}
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	p.clientFile = write("client.pem", "CERTIFICATE", cliDER)
	p.clientKeyFile = write("client-key.pem", "EC PRIVATE KEY", keyDER(cliKey))
	return p
}

func TestLogger(t *testing.T) {
	for _, tt := range []struct {
		yaml, want string
		debug      bool
	}{
		{"", `level=INFO msg=hello took=1.5s`, false},
		{"log_format: json\nlog_level: debug\n", `"level":"INFO","msg":"hello","took":1.5}`, true},
		{"log_level: warn\n", ``, false},
	} {
		cfg, err := config.Parse("w.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		log := cfg.Logger(&b)
		log.Info("hello", "took", 1500*time.Millisecond) // seconds in JSON, Go's notation in text
		log.Debug("details")
		if tt.want == "" && b.Len() != 0 || !strings.Contains(b.String(), tt.want) {
			t.Errorf("%q: logged %q, want %q", tt.yaml, b.String(), tt.want)
		}
		if got := strings.Contains(b.String(), "details"); got != tt.debug {
			t.Errorf("%q: debug logged = %v, want %v", tt.yaml, got, tt.debug)
		}
	}
}
