package serverconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/serverconf"
)

// TestCheckSkipsComments: keys in comments (# and //, as nats-server's
// lexer reads them) name no files. The server.conf that toolctl auth
// init writes says "#   operator  toolctl --nkey operator.nk" in its
// header: Check read it as operator naming the file "toolctl", so a
// worker started from a directory holding the toolctl binary refused to
// start ("operator toolctl: ... bytes, over the limit"). A key after a
// quoted "#" is still read, and a real one still refused.
func TestCheckSkipsComments(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	big := make([]byte, 2<<20)
	for _, name := range []string{"toolctl", "big.pem"} {
		if err := os.WriteFile(filepath.Join(dir, name), big, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, conf string
		refused    bool
	}{
		{"hash comment", "#   operator  toolctl --nkey operator.nk (approve)\nport: 4222\n", false},
		{"slash comment", "port: 4222 // operator toolctl\n", false},
		{"comment after a value", "port: 4222 # tls { cert_file: big.pem }\n", false},
		{"key after a quoted hash", "authorization { password: \"a#b\", operator: toolctl }\n", true},
		{"real key", "tls {\n  cert_file: \"big.pem\"\n}\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "server.conf")
			if err := os.WriteFile(file, []byte(tt.conf), 0o600); err != nil {
				t.Fatal(err)
			}
			err := serverconf.Check(file)
			if got := err != nil; got != tt.refused {
				t.Fatalf("Check(%q) = %v, want refused %v", tt.conf, err, tt.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "over the limit") {
				t.Fatalf("Check(%q) = %v, want the size refused", tt.conf, err)
			}
		})
	}
}
