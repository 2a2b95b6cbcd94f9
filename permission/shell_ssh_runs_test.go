package permission

import "testing"

// TestSSHProgramsRun: ssh, scp and sftp run a command by the shell for
// -o ProxyCommand (LocalCommand, KnownHostsCommand), scp and sftp run
// the program of -S (and sftp -D's server) in place of ssh, and a
// config file -F names may set any of them, but no rule saw those: "ssh:*"
// allowed "ssh -o ProxyCommand='rm -rf x' host" and a deny rule on rm
// did not see it. They are now commands of the line (after ssh's host
// too, as ssh reads options there, not in the remote command), and a
// config file named on the line runs what cannot be read here.
func TestSSHProgramsRun(t *testing.T) {
	denyRulesSee(t, []string{
		"ssh -o ProxyCommand='rm -rf x' host",
		"ssh -oProxyCommand='rm -rf x' host",
		"ssh -o 'ProxyCommand rm -rf x' host",
		"ssh -o proxycommand=rm host",
		"ssh -o 'ProxyCommand = rm -rf x' host",
		"ssh -p 22 -o LocalCommand='rm -rf x' -o PermitLocalCommand=yes host",
		"ssh -o KnownHostsCommand='rm -rf x' host",
		"ssh host -o ProxyCommand='rm -rf x' uptime",
		"scp -S rm a.txt host:b",
		"scp -o ProxyCommand='rm -rf x' a.txt host:b",
		"sftp -S rm host",
		"sftp -D rm host",
		"rsync -e \"ssh -o ProxyCommand='rm -rf x'\" a host:b",
	}, nil, []string{
		"ssh host uptime",
		"ssh -p 2222 -i key -o StrictHostKeyChecking=no host 'ls -la'",
		"ssh host ls -o ProxyCommand=rm",
		"ssh -F /dev/null host uptime",
		"scp -P 2222 a.txt host:b",
		"sftp -b batch.txt host",
	})
	p := Policy{Rules: shellAllowRules(t, "ssh", "scp", "sftp", "nc")}
	for _, c := range []struct {
		line string
		want Behavior
	}{
		{"ssh -o ProxyCommand='rm -rf x' host", Ask},
		{"ssh -o ProxyCommand='nc -X 5 -x proxy:1080 %h %p' host uptime", Allow},
		{"ssh -F ./ssh_config host uptime", Ask},
		{"ssh -o ProxyCommand=sh host", Ask},
		{"ssh -F ./ssh_config -o ProxyCommand='nc %h %p' host", Ask},
		{"scp -F ./ssh_config a.txt host:b", Ask},
		{"scp -S ./wrapper a.txt host:b", Ask},
		{"ssh host uptime", Allow},
		{"scp a.txt host:b", Allow},
	} {
		if d := Decide(p, shell, cmd(c.line)); d.Behavior != c.want {
			t.Errorf("%q: %s (%s), want %s", c.line, d.Behavior, d.Reason, c.want)
		}
	}
}
