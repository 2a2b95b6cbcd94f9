package permission

import "testing"

// TestDenyRuleSeesExecWrappers: taskset, unshare, nsenter, strace,
// ltrace, chrt, catchsegv, firejail and pkexec run the command after
// their options (and taskset's mask, chrt's priority); an option's value
// may be the next word, the rest of a cluster (-t1) or, abbreviated as
// getopt takes it, after "=" or not (--prop private; an abbreviation
// may be a flag's whole name: both readings are read). A short option
// whose value is optional takes only the rest of its word (nsenter -mt:
// t is -m's file), and strace -o '|cmd' pipes its output to a command.
func TestDenyRuleSeesExecWrappers(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"taskset 1 rm -rf x",
		"taskset -c 0 rm -rf x",
		"taskset -ac 0-3 rm -rf x",
		"unshare -r rm -rf x",
		"unshare -mUr --propagation private rm -rf x",
		"unshare --prop private rm -rf x",
		"unshare -S 0 -G0 rm -rf x",
		"nsenter -t 1 -m rm -rf x",
		"nsenter -t1 -a rm -rf x",
		"nsenter --target 1 --mount rm -rf x",
		"nsenter -mt rm -rf x",
		"nsenter -m/proc/1/ns/mnt rm -rf x",
		"strace -f rm -rf x",
		"strace -fo log -e trace=file rm -rf x",
		"strace -s 64 -u root -- rm -rf x",
		"strace -o '|rm -rf x' ls",
		"strace --output '!rm -rf x' ls",
		"strace --quiet all rm -rf x",
		"strace --quiet rm -rf x",
		"ltrace rm -rf x",
		"ltrace -n 2 -o log rm -rf x",
		"chrt 1 rm -rf x",
		"chrt -f 10 rm -rf x",
		"chrt -d -T 5 -P 10 0 rm -rf x",
		"catchsegv rm -rf x",
		"firejail rm -rf x",
		"firejail --net=none --private -- rm -rf x",
		"pkexec rm -rf x",
		"pkexec --user root rm -rf x",
		"sudo --us root rm -rf x",
		"strace --summary rm -rf x", // a flag, and a prefix of --summary-sort-by
		"env --split-string 'rm -rf x'",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"taskset 1 ls", "strace -f -o log ls", "chrt -p 1234", "nsenter -t 1 -m ls", "pkexec --user root ls"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleSeesCommandStrings: su, runuser, script and flock run the
// value of -c (--command, su's --session-command) as a shell script,
// wherever it stands among the user name, the shell's arguments and the
// lock file, clustered (-lc, -qc) or attached (--command=…); su -s runs
// the shell it names. runuser -u USER, flock FILE and BSD script FILE
// run the command after them, and sg GROUP [-c] runs its command string.
func TestDenyRuleSeesCommandStrings(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"su -c 'rm -rf x'",
		"su root -c 'rm -rf x'",
		"su -l -c 'rm -rf x'",
		"su - root -c 'ls; rm -rf x'",
		"su -lc 'rm -rf x' root",
		"su -g wheel -c 'rm -rf x'",
		"su --command='rm -rf x' root",
		"su --comm 'rm -rf x' root",
		"su --session-command 'rm -rf x'",
		"su root -- -c 'rm -rf x'",
		"su -s /bin/rm root",
		"runuser -u u -- rm -rf x",
		"runuser -u u rm -rf x",
		"runuser --user=u -- rm -rf x",
		"runuser -c 'rm -rf x'",
		"runuser -l u -c 'rm -rf x'",
		"script -qc 'rm -rf x' /dev/null",
		"script -c 'rm -rf x'",
		"script -q -c 'rm -rf x' -O log",
		"script --command='rm -rf x' log",
		"script -q /dev/null rm -rf x",
		"flock /tmp/l rm -rf x",
		"flock -n -w 5 /tmp/l rm -rf x",
		"flock /tmp/l -c 'rm -rf x'",
		"flock -c 'rm -rf x' /tmp/l",
		"flock -x /tmp/l --command 'rm -rf x'",
		"sg group -c 'rm -rf x'",
		"sg group 'rm -rf x'",
		"sg - group -c 'ls && rm -rf x'",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"su -c 'ls -l' root", "su - root", "runuser -u u -- ls", "script -qc 'ls' /dev/null", "flock /tmp/l -c ls", "sg group -c 'echo rm'"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleSeesWatchScripts: watch joins its command's words and runs
// them with sh -c (with -x, --exec: as a command), and -d (--differences)
// takes a value only in its own word: watch -d rm runs rm.
func TestDenyRuleSeesWatchScripts(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"watch rm -rf x",
		"watch 'ls; rm -rf x'",
		"watch ls '&&' rm -rf x",
		"watch -n 1 'ls && rm -rf x'",
		"watch -d rm -rf x",
		"watch --differences rm -rf x",
		"watch -dn1 rm -rf x",
		"watch -q 3 rm -rf x",
		"watch -x rm -rf x",
		"watch -tx -- rm -rf x",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"watch ls", "watch -n 5 'ls -l'", "watch -d 'git status'", "watch -x echo 'rm x'"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleSeesParallelAsAnyCommand: GNU parallel (and sem) runs its
// command words, or each input line or argument when it has none, as
// shell scripts, after options too many to read here: what it runs
// matches every deny and ask pattern, as a computed command name does,
// without a safety ask.
func TestDenyRuleSeesParallelAsAnyCommand(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"parallel rm ::: x",
		"parallel ::: 'rm -rf x'",
		"ls | parallel -j4 rm",
		"parallel -j 4 echo ::: a",
		"sem -j2 rm -rf x",
		"sudo parallel rm ::: x",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	ask := Policy{Rules: []Rule{rule(t, "execute_shell_command:git push:*", Ask)}}
	if d := Decide(ask, shell, cmd("parallel echo ::: a")); d.Behavior != Ask || d.Safety || d.Reason == "mode" {
		t.Errorf("ask git push:*, parallel echo ::: a: %s (%s, safety %v), want the rule's ask", d.Behavior, d.Reason, d.Safety)
	}
	if d := Decide(Policy{Mode: ModeDontAsk, Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}}, shell, cmd("parallel echo ::: a")); d.Behavior != Allow {
		t.Errorf("allow *, parallel echo ::: a: %s (%s), want allow", d.Behavior, d.Reason)
	}
}

// TestDenyRuleSeesGitConfigCommands: a configuration value given with git
// -c (or GIT_PAGER, GIT_EDITOR, … before it) that git runs as a command
// (core.pager, core.editor, core.sshCommand, pager.*, diff.*.textconv,
// credential.helper, a "!" alias, …) is read as a script, and an alias
// without "!" as the git command it names; a value that makes git run
// what cannot be told (include.path, core.hooksPath, --config-env,
// --exec-path=DIR, GIT_CONFIG_PARAMETERS) matches every deny and ask
// pattern. git's own -c after its subcommand (git log -c) is no such
// value.
func TestDenyRuleSeesGitConfigCommands(t *testing.T) {
	p := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny), rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range []string{
		"git -c core.pager='rm -rf x' log",
		"git -c Core.Pager='rm -rf x' log",
		"git -c core.editor='rm -rf x' commit",
		"git -c core.sshCommand='rm -rf x' fetch",
		"git -c alias.x='!rm -rf x' x",
		"git -c alias.x='!f() { rm -rf x; }; f' x",
		"git -c pager.log='rm -rf x' log",
		"git -c diff.bin.textconv='rm -rf x' diff",
		"git -c credential.helper='!rm -rf x' push",
		"git -c filter.f.smudge='rm -rf x' checkout .",
		"git -C /srv/app -c core.pager='rm -rf x' log",
		"git --git-dir /srv/app/.git -c core.pager='rm -rf x' log",
		"git -c include.path=/tmp/cfg log",
		"git -c core.hooksPath=/tmp/hooks commit",
		"git -c protocol.ext.allow=always fetch",
		"git --config-env=core.pager=CMD log",
		"git --config-env core.pager=CMD log",
		"git --exec-path=/tmp/bin status",
		"GIT_PAGER='rm -rf x' git log",
		"GIT_SSH_COMMAND='rm -rf x' git fetch",
		"GIT_CONFIG_PARAMETERS=x git log",
		"sudo git -c core.pager='rm -rf x' log",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(p, shell, cmd("git -c alias.p=push p origin")); d.Behavior != Ask {
		t.Errorf("ask git push:*, git -c alias.p=push p origin: %s (%s), want ask", d.Behavior, d.Reason)
	}
	for _, c := range []string{
		"git -c color.ui=always log",
		"git -c core.quotepath=off status",
		"git -c core.pager=less log",
		"git --exec-path",
		"git log -c",
		"git -c alias.st=status st",
		"GIT_PAGER=cat git log",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleSeesDebuggerAndIOWrappers: unbuffer, valgrind, proxychains
// and faketime run the command after their options (and faketime's
// timestamp), and gdb whatever its commands say (-ex 'shell …'): a deny
// rule on rm did not see "unbuffer rm -rf x" or "gdb -batch -ex run
// --args rm -rf x". What gdb runs cannot be read: every deny rule
// matches it.
func TestDenyRuleSeesDebuggerAndIOWrappers(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"unbuffer rm -rf x",
		"unbuffer -p rm -rf x",
		"valgrind rm -rf x",
		"valgrind --tool=memcheck --leak-check=full rm -rf x",
		"gdb -batch -ex run --args rm -rf x",
		"gdb --args rm -rf x",
		"gdb -x cmds rm",
		"gdb -batch -ex 'shell rm -rf x'",
		"gdb --args ls -l",
		"lldb -o 'platform shell rm -rf x'",
		"lldb -- rm -rf x",
		"gdb-multiarch --args rm -rf x",
		"proxychains rm -rf x",
		"proxychains4 -q -f conf rm -rf x",
		"faketime '2020-01-01' rm -rf x",
		"faketime -f '+2d' rm -rf x",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"unbuffer ls", "valgrind --tool=memcheck ls", "proxychains4 -f conf curl x", "faketime '2020-01-01' date"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
