package config

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse: a config file an operator may not have written gets a
// config that validates, or errors that each say what is wrong (with the
// file's name), never a panic.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"", "nats:\n  url: nats://localhost:4222\n", "groups:\n  - name: g\n    description: G\n",
		"a: &a [*a]\n", "x: &x {a: 1}\ny: *x\n", "nats: [1, 2]\n", "---\n---\n", "permissions:\n  rules:\n    - allow: \"execute_shell_command:git status:*\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("an error that is not a list of config errors: %T %v", err, err)
			}
			for _, e := range errs {
				if e.Reason == "" || e.File != "fuzz.yaml" {
					t.Fatalf("an error without its file or reason: %+v", e)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("a parsed config does not validate: %v", err)
		}
		_ = c.String()
	})
}
