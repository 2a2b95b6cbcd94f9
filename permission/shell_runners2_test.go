package permission

import "testing"

// TestDenyRuleSeesCommandsToolsRun: commands that tools run by their
// options and operands were seen by no rule, deny rules included: git
// rebase --exec, git submodule foreach, git bisect run, go vet
// -vettool, tar's --to-command, --use-compress-program (-I),
// --info-script (-F) and --checkpoint-action=exec=, rsync -e (--rsh,
// RSYNC_RSH), rg --pre, make SHELL=, awk's system() and pipes, and sed's
// e command and s///e flag. They are now commands of the line; awk and
// sed code that runs a command, and a program they read from a file,
// cannot be read: every deny and ask rule matches it.
func TestDenyRuleSeesCommandsToolsRun(t *testing.T) {
	denyRulesSee(t, []string{
		"git rebase --exec 'rm -rf x' main",
		"git rebase -x 'rm -rf x' main",
		"git rebase -x'rm -rf x' main",
		"git rebase -ix 'rm -rf x' main",
		"git rebase main --exec='rm -rf x'",
		"git rebase --exe 'rm -rf x' main",
		"git -C sub rebase -x 'rm -rf x' main",
		"git submodule foreach 'rm -rf x'",
		"git submodule foreach --recursive rm -rf x",
		"git submodule --quiet foreach -q 'ls; rm -rf x'",
		"git bisect run rm -rf x",
		"git bisect run sh -c 'rm -rf x'",
		"go vet -vettool=/bin/rm ./...",
		"go vet -vettool rm ./...",
		"go vet --vettool=rm ./...",
		"tar --to-command='rm -rf x' -xf a.tar",
		"tar -xf a.tar --to-command 'rm -rf x'",
		"tar --to-c='rm -rf x' -xf a.tar",
		"tar --use-compress-program='rm -rf x' -xf a.tar",
		"tar -I 'rm -rf x' -xf a.tar",
		"tar -xf a.tar -Irm",
		"tar -xvIrm -f a.tar",
		"tar xIf rm a.tar",
		"tar xfI a.tar rm",
		"tar --checkpoint=1 --checkpoint-action=exec='rm -rf x' -cf a.tar .",
		"tar --checkpoint-action exec='rm -rf x' -cf a.tar .",
		"tar -cf a.tar -F 'rm -rf x' .",
		"tar --info-script='rm -rf x' -cf a.tar .",
		"tar --new-volume-script=rm -cf a.tar .",
		"tar --rsh-command=rm -xf host:a.tar",
		"TAR_OPTIONS=--to-command=rm tar -xf a.tar",
		"TAR_OPTIONS=-v tar xIf rm a.tar",
		"rsync -e 'rm -rf x' a host:b",
		"rsync -avze 'rm -rf x' a host:b",
		"rsync -av -e'rm -rf x' a host:b",
		"rsync --rsh='rm -rf x' a host:b",
		"rsync --rsh 'rm -rf x' a host:b",
		"RSYNC_RSH='rm -rf x' rsync a host:b",
		"rg --pre rm foo",
		"rg --pre=/bin/rm foo",
		"rg -n --pre rm foo src",
		"rg --hostname-bin=rm foo",
		"make SHELL=rm",
		"make -j4 SHELL=/bin/rm all",
		"make all SHELL:='rm -rf x'",
		"gmake SHELL=rm",
		"MAKEFLAGS='SHELL=rm' make",
		"make --eval='all:; rm -rf x'",
		"awk 'BEGIN { system(\"rm -rf x\") }'",
		"awk 'BEGIN{system (\"rm -rf x\")}'",
		"awk '{ print | \"rm -rf x\" }' f",
		"awk '{ print $0 | \"sh\" }' f",
		"awk 'BEGIN { \"rm -rf x\" | getline }'",
		"gawk 'BEGIN { print |& \"rm x\" }'",
		"awk -v n=1 -F: 'BEGIN { system(\"rm x\") }' f",
		"awk -f prog.awk f",
		"gawk '@load \"ext\"; BEGIN { x = 1 }'",
		"gawk '@include \"lib.awk\"\nBEGIN { x = 1 }'",
		"awk --file=prog.awk f",
		"gawk -e 'BEGIN { system(\"rm x\") }'",
		"mawk '{system($0)}' f",
		"nawk '{system($0)}' f",
		"busybox awk '{system($0)}' f",
		"sed 'e rm -rf x' f",
		"sed '1e rm -rf x' f",
		"sed -n '/x/e' f",
		"sed 's/.*/rm -rf x/e' f",
		"sed -n 's/a/b/ep' f",
		"sed -n 's/a/b/pe' f",
		"sed --expression='s/x/y/e' f",
		"sed -e 1d -e 'e rm x' f",
		"sed -ne 's/a/b/e' f",
		"sed -i 's/a/b/;e rm x' f",
		"sed '/x/{e rm x\n}' f",
		"sed -f script.sed f",
		"sed --file=script.sed f",
	}, []string{
		"git rebase --exec 'git push' main",
		"git submodule foreach git push",
		"git bisect run git push",
		"tar --to-command='git push' -xf a.tar",
		"rsync -e 'git push' a host:b",
	}, everydayRunnerLines)
}

// everydayRunnerLines run nothing but the tool itself.
var everydayRunnerLines = []string{
	"git rebase main",
	"git rebase -i HEAD~3",
	"git rebase --onto main a b",
	"git rebase --continue",
	"git rebase -s ours main",
	"git submodule update --init --recursive",
	"git submodule status",
	"git bisect start",
	"git bisect good v1",
	"go vet ./...",
	"go vet -v ./...",
	"tar xzf a.tgz",
	"tar -czf a.tgz dir",
	"tar -xf a.tar -C out",
	"tar --exclude=.git -czf a.tgz .",
	"tar -tvf a.tar",
	"tar --checkpoint -cf a.tar .",
	"tar --checkpoint=10 --checkpoint-action=dot -cf a.tar .",
	"tar -cf - . | tar -xf - -C out",
	"rsync -a a b",
	"rsync -avz --delete src/ dst/",
	"rsync -a --exclude node_modules a/ b/",
	"rg foo",
	"rg -n foo src",
	"rg --type go -e foo",
	"rg --pre-glob '*.gz' foo",
	"make",
	"make -j4 all",
	"make test CFLAGS=-O2",
	"make SHELLFLAGS=-ec",
	"awk '{print $1}' f",
	"awk -F: '{print $1}' f",
	"awk -F'|' '{print $2}' f",
	"awk 'NR>1 && $3 > 10 {print $2}' f",
	"awk '/foo|bar/ {n++} END {print n}' f",
	"awk '$1 ~ /a|b/' f",
	"awk '$1 == \"a|b\"' f",
	"awk '{ s = s \"|\" $1 } END { print s }' f",
	"awk 'BEGIN { x = a || b; print x }'",
	"awk '{ n = $1 / 2; m = n / 3 }' f",
	"awk '{ print \"system(x)\" }' f",
	"awk '{ mysystem = 1 } # system(\"rm x\") is not run\n' f",
	"awk -v x=1 '{ print x }' f",
	"awk '{ print \"@load\" }' f",
	"sed -n 1p f",
	"sed 's/a/b/g' f",
	"sed -i 's/foo/bar/' f",
	"sed -e 's/a/b/' -e '/x/d' f",
	"sed 's/e/E/g' f",
	"sed 's/x/y/w out.txt' f",
	"sed '/^#/d;s/ *$//' f",
	"sed 's|a|b|g' f",
	"sed -E 's/(a|e)+/x/2' f",
	"sed ':a;N;$!ba;s/\\n/ /g' f",
	"sed '/start/,/end/{/end/!d}' f",
	"sed '1i\\\nheader' f",
	"sed 'a tail' f",
	"sed -n '$=' f",
	"sed 'y/abc/xyz/' f",
}

// TestAllowRuleNeedsCommandsToolsRun: an allow rule on a tool that runs
// another command (git rebase --exec, tar --to-command, rsync -e, rg
// --pre, make SHELL=) covers the line only when the command it runs is
// covered too, as for find -exec; awk and sed code that runs a command
// asks, and the everyday lines decide as before.
func TestAllowRuleNeedsCommandsToolsRun(t *testing.T) {
	var p Policy
	for _, pat := range []string{"git rebase:*", "git submodule:*", "git bisect:*", "go vet:*", "tar:*", "rsync:*", "rg:*",
		"make:*", "gmake:*", "awk:*", "gawk:*", "sed:*", "git push:*", "ssh:*", "git send-email:*"} {
		p.Rules = append(p.Rules, rule(t, "execute_shell_command:"+pat, Allow))
	}
	for _, c := range []struct {
		line string
		want Behavior
	}{
		{"git rebase --exec 'rm -rf x' main", Ask},
		{"git rebase --exec 'git push' main", Allow},
		{"git rebase --exec 'make test' main", Allow},
		{"git submodule foreach 'rm -rf x'", Ask},
		{"git submodule foreach 'git status'", Allow}, // it only reads
		{"git bisect run rm -rf x", Ask},
		{"git bisect run make test", Allow},
		{"go vet -vettool=/tmp/tool ./...", Ask},
		{"tar --to-command='rm -rf x' -xf a.tar", Ask},
		{"tar -I zstd -xf a.tar", Ask},
		{"tar -I 'rg x' -xf a.tar", Allow},
		{"rsync -e 'rm -rf x' a host:b", Ask},
		{"rsync -e 'ssh -p 22' a host:b", Allow},
		{"rg --pre ./unpack foo", Ask},
		{"make SHELL=/tmp/sh", Ask},
		{"awk 'BEGIN { system(\"ls\") }'", Ask},
		{"sed 's/a/b/e' f", Ask},
		{"sed -f script.sed f", Ask},
		{"git send-email --to-cmd=./addrs 0001.patch", Ask},
		{"git send-email --to=a@example.com --cc b@example.com 0001.patch", Allow},
	} {
		if d := Decide(p, shell, cmd(c.line)); d.Behavior != c.want {
			t.Errorf("%q: %s (%s), want %s", c.line, d.Behavior, d.Reason, c.want)
		}
	}
	for _, l := range everydayRunnerLines {
		if d := Decide(p, shell, cmd(l)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", l, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleSeesGitCommandsRun: git's other options whose value is a
// command it runs: filter-branch's filters and --setup, difftool
// --extcmd, grep -O, send-email's --to-cmd and the like, and
// --upload-pack and --receive-pack (run here for a repository on this
// machine).
func TestDenyRuleSeesGitCommandsRun(t *testing.T) {
	denyRulesSee(t, []string{
		"git filter-branch --tree-filter 'rm -rf x' HEAD",
		"git filter-branch --msg-filter='rm -rf x' HEAD",
		"git filter-branch --setup 'rm -rf x' --tree-filter true HEAD",
		"git send-email --to-cmd='rm -rf x' 0001.patch",
		"git send-email --sendmail-cmd 'rm -rf x' 0001.patch",
		"git difftool -x 'rm -rf x' HEAD",
		"git difftool --extcmd='rm -rf x' HEAD",
		"git grep -O'rm -rf x' foo",
		"git grep --open-files-in-pager='rm -rf x' foo",
		"git clone --upload-pack='rm -rf x; git-upload-pack' src dst",
		"git clone -u 'rm -rf x' src dst",
		"git fetch --upload-pack='rm -rf x' origin",
		"git ls-remote --upload-pack 'rm -rf x' src",
		"git push --receive-pack='rm -rf x' origin main",
		"git archive --exec='rm -rf x' --remote=src HEAD",
	}, nil, []string{
		"git difftool -t meld HEAD",
		"git grep -O foo",
		"git grep -e foo -- src",
		"git clone -b main src dst",
		"git fetch origin",
		"git filter-branch --subdirectory-filter sub HEAD",
		"git send-email --to=a@example.com 0001.patch",
	})
}
