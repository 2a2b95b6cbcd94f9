package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAllowRuleDoesNotCoverFileChanges: a rule naming rm, rmdir, touch,
// mkdir, sed, chmod, chown, chgrp, truncate or shred allowed it changing
// files outside the working directories ("rm:*" allowed "rm -rf
// /srv/other", "sed:*" "sed -i s/a/b/ /srv/x"), where cp and mv
// destinations there ask, and after a cd such a file on a dangerous path
// was no safety ask ("cd /usr && rm -rf local", "cd /var && touch
// lib/x" was, "cd /var && mkdir lib" not). The files they change (find's
// starting points with -delete) are now writes: outside, no rule naming
// the command covers them and none is suggested; on a dangerous path,
// a safety ask; inside, the command's, as before.
func TestAllowRuleDoesNotCoverFileChanges(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Symlink(other, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "rm", "rmdir", "touch", "mkdir", "sed", "chmod", "chown", "chgrp", "truncate",
		"shred", "find", "cd", "sudo", "xargs")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"rm -rf " + other,
		"rm -f a.txt " + out,
		"rm -- " + out,
		"rm -r link/x",
		"rm ../x",
		"touch $OUT",
		"sudo rm -rf " + other,
		"xargs rm -f " + out,
		"cd " + other + " && rm -rf build",
		"rmdir " + other,
		"rmdir -p " + out,
		"touch " + out,
		"touch -d yesterday " + out,
		"touch -r ref.txt " + out,
		"mkdir " + out,
		"mkdir -p " + out + "/y",
		"mkdir -m 700 " + out,
		"mkdir -m700 " + out,
		"sed -i s/a/b/ " + out,
		"sed -i.bak 's/a/b/' " + out,
		"sed -ni 's/a/b/p' " + out,
		"sed -e s/a/b/ -i " + out,
		"sed --in-place=.bak -e s/a/b/ " + out,
		"sed --in-pl -f script.sed " + out,
		"sed -i -- s/a/b/ " + out,
		"chmod 644 " + out,
		"chmod -R u+w " + other,
		"chmod -w " + out,
		"chmod -x,g+r " + out,
		"chmod --reference=a.txt " + out,
		"chown me " + out,
		"chown -R me:me " + other,
		"chown --from=root me " + out,
		"chown --reference a.txt " + out,
		"chgrp staff " + out,
		"truncate -s 0 " + out,
		"truncate -s0 " + out,
		"truncate --size=0 " + out,
		"truncate -r a.txt " + out,
		"shred -u " + out,
		"shred -n 3 " + out,
		"find " + other + " -delete",
		"find " + other + " -name '*.o' -delete",
		"find -L " + other + " -type f -delete",
		"cd " + other + " && find -delete",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
		if len(d.Suggested) > 0 {
			t.Errorf("%q: suggested %v, want none", line, d.Suggested)
		}
	}
	for _, line := range []string{
		"rm -rf build",
		"rm -f a.txt sub/b.txt",
		"rm -rf " + wd + "/build",
		"rmdir sub",
		"rmdir -p sub/a/b",
		"touch a.txt",
		"touch -d yesterday a.txt",
		"touch -r " + other + "/ref a.txt",
		"mkdir -p build/out",
		"mkdir -m 700 secret",
		"sed -i s/a/b/ a.txt",
		"sed -i 's#/usr/local#/opt#' a.txt",
		"sed -i.bak -e 's/a/b/' a.txt",
		"sed -n 's/a/b/p' " + other + "/in.txt",
		"sed 's/a/b/' " + other + "/in.txt",
		"chmod +x script.sh",
		"chmod -x script.sh",
		"chmod -R u+w build",
		"chmod --reference=" + other + "/a a.txt",
		"chown $USER a.txt",
		"chown -R $USER:$USER build",
		"chgrp staff a.txt",
		"truncate -s 0 log.txt",
		"truncate -r " + other + "/a log.txt",
		"shred -u secret.txt",
		"find . -name '*.o' -delete",
		"find build -delete",
		"find -delete",
		"find " + other + " -name '*.go'",
		"cd sub && rm -rf build",
		"cd sub && touch a.txt",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd /usr && rm -rf local",
		"cd /var && mkdir lib",
		"cd /var && rm -rf lib",
		"cd /var && touch lib",
		"cd /var && chmod 777 lib",
		"cd /var && chown me lib",
		"cd /var && truncate -s0 lib",
		"cd /var && sed -i s/a/b/ lib",
		"cd /var && shred lib",
		"cd /var && rmdir lib",
		"cd /var && find lib -delete",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
