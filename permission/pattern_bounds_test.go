package permission

import (
	"fmt"
	"strings"
	"testing"
)

// TestPatternWildcardsBounded: a rule's pattern holds at most
// MaxPatternWildcards wildcards. A path pattern is matched as a regular
// expression whose cost grows with them times the path's length: 1365
// "**" against a model's path of 1 MB took 30 s a decision.
func TestPatternWildcardsBounded(t *testing.T) {
	ok := Rule{Tool: "write_file", Pattern: strings.Repeat("*", MaxPatternWildcards), Behavior: Deny}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%d wildcards: %v", MaxPatternWildcards, err)
	}
	for _, p := range []string{strings.Repeat("**/", 700) + "x", strings.Repeat("?", MaxPatternWildcards+1)} {
		r := Rule{Tool: "write_file", Pattern: p, Behavior: Deny}
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "wildcards") {
			t.Fatalf("a pattern of %d wildcards: %v, want it refused", strings.Count(p, "*")+strings.Count(p, "?"), err)
		}
	}
}

// TestGlobCacheBounded: the compiled path patterns are not kept for
// ever: sessions' rules come and go, and each kept its pattern's
// regular expression for as long as the worker ran.
func TestGlobCacheBounded(t *testing.T) {
	for i := range maxCachedGlobs + 100 {
		if matchGlob(fmt.Sprintf("/work/s%d/**", i), "/work/other/x") {
			t.Fatal("a pattern matched another directory")
		}
	}
	n := 0
	globCache.Range(func(any, any) bool { n++; return true })
	if n > maxCachedGlobs {
		t.Fatalf("%d compiled patterns kept, more than %d", n, maxCachedGlobs)
	}
	if !matchGlob("/work/s1/**", "/work/s1/x") {
		t.Fatal("a pattern compiled again does not match")
	}
}

// TestParsedRuleWildcardsBounded: a rule written TOOL:PATTERN is held to
// the same bound as Validate's, so that a worker's configuration names
// it (config.Validate reads rules with ParseRule) and a fleet's listing
// leaves out a rule an instance announces past the bound, as it leaves
// out any it cannot read, instead of failing for every session.
func TestParsedRuleWildcardsBounded(t *testing.T) {
	spec := "write_file:" + strings.Repeat("*", MaxPatternWildcards+1)
	if _, err := ParseRule(spec, Deny); err == nil || !strings.Contains(err.Error(), "wildcards") {
		t.Fatalf("ParseRule of %d wildcards: %v, want it refused", MaxPatternWildcards+1, err)
	}
	opts, skipped := Announced{Mode: "default", Deny: []string{spec, "write_file:*.env"}}.Options()
	if len(skipped) != 1 || len(opts.Rules) != 1 {
		t.Fatalf("announced rules: kept %v, skipped %v", opts.Rules, skipped)
	}
	if _, err := NewGuard(NewMemoryStore(), opts); err != nil {
		t.Fatalf("a guard of the announced rules it could read: %v", err)
	}
}
