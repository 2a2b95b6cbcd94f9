package permission

import "testing"

// TestPythonStdlibModuleWrites: python -m gzip FILE writes FILE.gz (-d:
// FILE without it), python -m zipfile -c OUT and tarfile -c OUT create
// an archive, their -e extracts into a directory (tarfile's the current
// one without it), and python -m json.tool IN OUT writes OUT, yet
// "python:*" allowed them writing to /srv/other, where "gzip
// /srv/other/f" with "gzip:*" asks. Those files are now files written;
// inside, and reading (-l, -t, json.tool to the standard output), they
// stay the rule's.
func TestPythonStdlibModuleWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "python", "python3", "cd"), WorkingDirs: dirs}
		checkLines(t, p, []string{
			"python -m gzip data.csv",
			"python3 -m gzip -d data.csv.gz",
			"python3 -m zipfile -c dist.zip src " + other + "/x",
			"python3 -m zipfile -e dist.zip out",
			"python3 -m zipfile -l " + other + "/a.zip",
			"python3 -m tarfile -c dist.tar.gz src",
			"python3 -m tarfile --filter data -e dist.tar.gz",
			"python3 -m tarfile -t " + other + "/a.tar",
			"python -m json.tool " + other + "/in.json",
			"python -m json.tool in.json out.json",
			"python -m json.tool --indent 2 " + other + "/in.json pretty.json",
		}, []string{
			"python -m gzip " + other + "/f",
			"python -m gzip --best " + other + "/f",
			"python3 -m gzip -d " + other + "/f.gz",
			"python3 -m zipfile -c " + other + "/a.zip f",
			"python3 -m zipfile --create " + other + "/a.zip f",
			"python3 -m zipfile -e a.zip " + other,
			"python3 -m tarfile -c " + other + "/a.tar f",
			"python3 -m tarfile -e a.tar " + other,
			"cd " + other + " && python3 -m tarfile -e " + wd + "/a.tar",
			"python -m json.tool in.json " + other + "/out.json",
			"python -m json.tool --sort-keys --indent 2 in.json " + other + "/out.json",
		})
	}
}
