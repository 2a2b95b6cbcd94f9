package skill

import (
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestQueriesDoNotCopyEveryFrontMatter: every query of a set (the Skill
// tool's Find, an announcement's Catalog, a skill request's look-up)
// copied the front matter of every skill it loaded, down to each value,
// though it keeps one skill or none of it: 500 skills of a 64 KiB front
// matter (a list of 32000 values each, within every bound then) made
// each query take seconds and allocate half a gigabyte. A query copies the
// front matter of the skills it returns only, and those still are copies.
func TestQueriesDoNotCopyEveryFrontMatter(t *testing.T) {
	root := t.TempDir()
	for i := range 10 { // 4000 values each, within MaxFrontMatterValues
		writeSkill(t, filepath.Join(root, "heavy"+strconv.Itoa(i)), "---\nname: heavy"+strconv.Itoa(i)+"\ndescription: d\nlist: ["+strings.Repeat("x,", 3999)+"x]\n---\n# Heavy\n")
	}
	writeSkill(t, filepath.Join(root, "small"), skillDoc("small", "d", "# Small"))
	set, err := NewSet(&Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("", root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	// What a query gives out is still a copy.
	for _, sk := range append(set.All(), set.InGroup("")...) {
		sk.Metadata["name"] = "changed"
	}
	if sk, ok := set.Find("heavy0", nil); !ok || len(sk.Metadata["list"].([]any)) != 4000 || sk.Metadata["name"] != "heavy0" {
		t.Fatalf("Find(heavy): %v %v", ok, sk.Metadata["name"])
	} else {
		sk.Metadata["name"] = "changed"
	}
	if sk, _ := set.Find("heavy0", nil); sk.Metadata["name"] != "heavy0" {
		t.Fatalf("Find(heavy) after a caller changed a copy: name %v", sk.Metadata["name"])
	}
	for _, q := range []struct {
		what string
		run  func()
	}{
		{"Find(small)", func() {
			if _, ok := set.Find("small", nil); !ok {
				t.Fatal("Find(small) found nothing")
			}
		}},
		{"Catalog", func() { set.Catalog() }},
		{"a skill request's look-up", func() { answer(set, &wire.SkillRequest{Name: "small"}) }},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			q.run()
		}
		runtime.ReadMemStats(&after)
		// A copy of the heavy front matters is 40000 values of 16 bytes.
		if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 128<<10 {
			t.Errorf("%s allocates %d bytes a query, want less than a copy of the heavy skills' front matters", q.what, per)
		}
	}
}
