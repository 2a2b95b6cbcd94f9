package skill

import (
	"strings"
	"testing"
)

// TestFrontMatterValuesBounded: a front matter within its bytes may
// write tens of thousands of values (a list of 32000 one-letter items
// in 64 KiB), each held decoded in Skill.Metadata for the skill's life
// at some 30 bytes: a skills directory of 500 such SKILL.md files
// (within MaxDirBytes) held 522 MB and took a minute to read. A front
// matter holds at most MaxFrontMatterValues values, counting what its
// aliases repeat.
func TestFrontMatterValuesBounded(t *testing.T) {
	many := "---\nname: a\ndescription: b\nlist: [" + strings.Repeat("x,", 30000) + "x]\n---\n"
	if _, err := Parse([]byte(many), "/d"); err == nil || !strings.Contains(err.Error(), "over the limit of 4096") {
		t.Fatalf("a list of 30001 values: %v, want it refused", err)
	}
	aliased := "---\nname: a\ndescription: b\nlist: &l [" + strings.Repeat("x,", 2099) + "x]\nagain: *l\n---\n"
	if _, err := Parse([]byte(aliased), "/d"); err == nil || !strings.Contains(err.Error(), "over the limit of 4096") {
		t.Fatalf("a list of 2100 values held twice: %v, want it refused", err)
	}
	fits := "---\nname: a\ndescription: b\nlist: [" + strings.Repeat("x,", 3999) + "x]\n---\n"
	if s, err := Parse([]byte(fits), "/d"); err != nil || len(s.Metadata["list"].([]any)) != 4000 {
		t.Fatalf("a list of 4000 values: %v", err)
	}
}
