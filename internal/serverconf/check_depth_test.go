package serverconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/serverconf"
)

// A nats-server configuration nested deeply ([[[[…, a {a {…) parses
// quickly, but nats-server then takes the digest of what it read as
// JSON, whose encoding checks each level again: 8000 levels took 1.5 s,
// 100000 held a worker's start for minutes at full CPU. Check refuses
// it, naming the file and the line; a configuration nested as deep as
// real ones are, and brackets in strings and comments, pass.
func TestCheckRefusesDeepNesting(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.conf")
	const n = 100000
	for _, deep := range []string{
		"port: 4222\na: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"port: 4222\n" + strings.Repeat("a {", n) + strings.Repeat("}", n) + "\n",
	} {
		if err := os.WriteFile(file, []byte(deep), 0o600); err != nil {
			t.Fatal(err)
		}
		err := serverconf.Check(file)
		if err == nil || !strings.Contains(err.Error(), file+":2: nested deeper than") {
			t.Errorf("Check = %v, want the nesting refused on line 2", err)
		}
		done := make(chan error, 1)
		go func() { _, _, err := embedded.FileDefaults(file); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
				t.Errorf("FileDefaults = %v, want the nesting refused", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("FileDefaults has not returned a minute later")
		}
	}

	real := `# brackets in comments: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
port: 4222
accounts {
  A {
    users: [
      {user: a, password: "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
       permissions: {publish: {allow: ["tools.>", '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[']}}}
    ]
  }
}
`
	if err := os.WriteFile(file, []byte(real), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := serverconf.Check(file); err != nil {
		t.Errorf("Check of a configuration nested as real ones are: %v", err)
	}
}
