package permission

import "testing"

// TestPythonTarfileMemberNames: python -m tarfile -e ARCHIVE [DIR]
// extracts each member under its name, "/" and ".." kept, with Python
// before 3.14 and no --filter (or --filter fully_trusted), as tar -P
// does, so "python3:*" allowed "python3 -m tarfile -e x.tar out" writing
// ../../.bashrc from a member of that name, where only out was checked
// and "tar -xPf x.tar -C out" with "tar:*" asks. Such an extraction now
// writes a file not known here; with --filter data or tar, which refuse
// a member outside DIR, and zipfile -e, which drops a name's "/" and
// "..", as tar and unzip do by default, only DIR is written.
func TestPythonTarfileMemberNames(t *testing.T) {
	wd := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "python", "python3"), WorkingDirs: dirs}
		checkLines(t, p, []string{
			"python3 -m tarfile --filter data -e a.tar out",
			"python3 -m tarfile -e a.tar out --filter=tar",
			"python3 -m tarfile --filt data -e a.tar",
			"python -m tarfile -v --filter=data --extract a.tar",
			"python3 -m tarfile -c a.tar src",
			"python3 -m tarfile -l a.tar",
			"python3 -m tarfile -t a.tar",
			"python3 -m tarfile --filter fully_trusted -c a.tar src",
			"python3 -m zipfile -e a.zip out",
		}, []string{
			"python3 -m tarfile -e a.tar out",
			"python3 -m tarfile -e a.tar",
			"python -m tarfile --extract a.tar out",
			"python3 -m tarfile -v -e a.tar",
			"python3 -m tarfile -e a.tar out --filter fully_trusted",
			"python3 -m tarfile --filter=fully_trusted -e a.tar",
			"python3 -m tarfile --filter data --filter fully_trusted -e a.tar",
		})
	}
}
