package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEverydayWritesInsideStayAllowed: the lines a build or a test run
// writes with, inside the working directories, are allowed by the rules
// naming their commands, as before arguments that name files written
// and cd were followed; in ACCEPT_EDITS the file-system commands inside
// are still accepted without a rule.
func TestEverydayWritesInsideStayAllowed(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "make", "go test", "go build", "tee", "sort", "cd", "pushd", "popd", "npm test",
		"cp", "mv", "git format-patch", "git diff", "curl", "wget", "find", "dd", "install", "ln",
		"rm", "rmdir", "touch", "mkdir", "sed", "chmod", "chown", "truncate", "shred",
		"rsync", "scp", "patch", "split", "awk")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"make > build.log",
			"make > build.log 2>&1",
			"go test ./... 2>&1 | tee out.txt",
			"go test -v ./... | tee -a logs/test.log",
			"go build -o bin/app ./cmd/app",
			"sort -o sorted.txt in.txt",
			"sort -u -o sorted.txt a.txt b.txt",
			"cd sub && make",
			"cd sub && make > build.log",
			"cd sub/deep && go test ./... | tee out.txt",
			"cd sub; npm test > test.log 2>&1",
			"pushd sub && make && popd",
			"cp a.txt b.txt",
			"cp -r src/ backup/",
			"mv old.txt new.txt",
			"git diff > changes.patch",
			"git diff --output=changes.patch",
			"git format-patch -o patches HEAD~2",
			"git format-patch HEAD~1",
			"curl -sSL -o vendor.tar.gz https://example.com/vendor.tar.gz",
			"curl -fsSLO https://example.com/vendor.tar.gz",
			"wget -q https://example.com/vendor.tar.gz",
			"wget -qO- https://example.com/install.txt | tee install.txt",
			"find . -name '*.go' -fprint files.txt",
			"dd if=/dev/zero of=disk.img bs=1M count=1",
			"install -m 0755 build/app bin/app",
			"ln -sf ../shared/config.yaml config.yaml",
			"rm -rf build dist",
			"rm -f *.o",
			"mkdir -p build && touch build/.stamp",
			"cd sub && rm -rf build && mkdir build",
			"rmdir sub/empty",
			"chmod +x scripts/run.sh",
			"chmod -R u+w build",
			"chown -R $USER build",
			"sed -i 's/old/new/g' main.go",
			"sed -i.bak -e 's|/usr/local|/opt|' config.txt",
			"sed 's/a/b/' in.txt > out.txt",
			"truncate -s 0 build.log",
			"shred -u secret.txt",
			"find . -name '*.pyc' -delete",
			"find build -type f -name '*.o' -delete",
			"rsync -a --delete src/ backup/",
			"scp host:/var/log/app.log logs/",
			"patch -p1 < fix.diff",
			"cd sub && patch -p0 -i ../fix.diff",
			"split -b 1M big.tar parts/big.tar.",
			"sed -n '/ERROR/w errors.log' app.log",
			"awk '$3 > 100 {print $1 > \"slow.txt\"}' times.txt",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%q (dirs %q): %s (%s), want allow", line, dirs, d.Behavior, d.Reason)
			}
		}
	}
	edits := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	for _, line := range []string{"mkdir -p build && cp a.txt build/", "mv a.txt b.txt", "touch sub/x"} {
		if d := Decide(edits, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("accept edits, %q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
