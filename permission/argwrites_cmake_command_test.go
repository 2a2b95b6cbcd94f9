package permission

import "testing"

// TestCmakeCommandWrites: cmake -E runs one of cmake's own commands (rm,
// remove_directory, make_directory, touch, copy, rename,
// create_symlink, tar and the like), which write or remove the files
// they are given, but cmakeWrites read -E as writing nothing, so
// "cmake:*" allowed "cmake -E rm -rf /srv/other", where "rm -rf
// /srv/other" asks. Their files are now files written; inside, and the
// commands that only read, stay the rule's.
func TestCmakeCommandWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "cmake"), WorkingDirs: dirs}
		for _, line := range []string{
			"cmake -E rm -rf " + other,
			"cmake -E rm -f -- -x " + other,
			"cmake -E remove -f " + other + "/x",
			"cmake -E remove_directory " + other,
			"cmake -E make_directory build " + other + "/d",
			"cmake -E touch " + other + "/x",
			"cmake -E touch_nocreate " + other + "/x",
			"cmake -E copy a.txt " + other,
			"cmake -E copy_if_different a.txt b.txt " + other + "/",
			"cmake -E copy -t " + other + " a.txt",
			"cmake -E copy_directory src " + other,
			"cmake -E rename " + other + "/x y",
			"cmake -E create_symlink target " + other + "/link",
			"cmake -E create_hardlink " + other + "/x y",
			"cmake -E tar czf " + other + "/a.tgz src",
		} {
			d := Decide(p, shell, cmd(line))
			if d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"cmake -E make_directory build",
			"cmake -E rm -rf build",
			"cmake -E copy " + other + "/a.txt build/",
			"cmake -E copy_directory " + other + "/assets build/assets",
			"cmake -E create_symlink " + other + " build/link",
			"cmake -E tar xzf " + other + "/a.tgz",
			"cmake -E cat " + other + "/x",
			"cmake -E sha256sum " + other + "/x",
			"cmake -E echo " + other,
			"cmake -E compare_files " + other + "/a b",
			"cmake -E capabilities",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
