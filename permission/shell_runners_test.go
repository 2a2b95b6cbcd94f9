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
