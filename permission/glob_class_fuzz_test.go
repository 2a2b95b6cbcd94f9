package permission

import "testing"

// FuzzMatchGlob: no pattern makes matching panic (a bracket set is
// compiled into the pattern's regular expression).
func FuzzMatchGlob(f *testing.F) {
	for _, s := range []string{"*.[ch]", "[z-a]", "[!]]", "[", "[a-]", "[-a]", "[]-]", "[\\]", "[[:alpha:]]", "[a-c-e]"} {
		f.Add(s, "/src/x.c")
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		matchGlob(pattern, path)
	})
}
