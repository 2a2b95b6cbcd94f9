package serverconf_test

import (
	"fmt"
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

// Variables ($name) share the value they name as nats-server parses,
// but its digest of the configuration, taken as JSON, writes each
// reference out whole: a "billion laughs" of nine lines, each a mapping
// of ten references to the line before, took 8 s at six lines and
// fills the memory at nine. Check refuses it, naming the file; a
// configuration that refers to its variables as real ones do passes.
func TestCheckRefusesMultiplyingVariables(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.conf")
	var b strings.Builder
	b.WriteString("v0: {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 1, j: 1}\n")
	for i := 1; i <= 9; i++ {
		refs := make([]string, 10)
		for j := range refs {
			refs[j] = fmt.Sprintf("k%d: $v%d", j, i-1)
		}
		fmt.Fprintf(&b, "v%d: {%s}\n", i, strings.Join(refs, ", "))
	}
	b.WriteString("port: 4222\n")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	err := serverconf.Check(file)
	if err == nil || !strings.Contains(err.Error(), file+": its variables") {
		t.Fatalf("Check = %v, want the variables refused", err) // not given to nats-server, which would fill the memory
	}
	if _, _, err := embedded.FileDefaults(file); err == nil || !strings.Contains(err.Error(), "its variables") {
		t.Errorf("FileDefaults = %v, want the variables refused", err)
	}

	real := "PERMS: {publish: {allow: [\"tools.>\", \"_INBOX.>\"]}, subscribe: {allow: [\"_INBOX.>\"]}}\n" +
		"accounts {\n  A {\n    users: [\n"
	for i := range 2000 {
		real += fmt.Sprintf("      {user: u%d, password: p%d, permissions: $PERMS}\n", i, i)
	}
	real += "    ]\n  }\n}\n"
	if err := os.WriteFile(file, []byte(real), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := serverconf.Check(file); err != nil {
		t.Errorf("Check of 2000 users sharing their permissions: %v", err)
	}
}
