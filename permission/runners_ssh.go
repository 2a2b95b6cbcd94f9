package permission

import (
	"slices"
	"strings"
)

// sshOptions are how ssh, scp and sftp read their options (OpenSSH's
// getopt: up to the first operand; ssh reads more after its host).
var sshOptions = map[string]optSpec{
	"ssh":  {short: "BbcDEeFIiJLlmOoPpQRSWw", stopAtOperand: true},
	"scp":  {short: "cDFiJlmoPSX", stopAtOperand: true},
	"sftp": {short: "BbcDFiJloPRSsX", stopAtOperand: true},
}

// sshCommandKeys are the ssh_config keywords (lower case) whose value is
// a command ssh runs by the shell.
var sshCommandKeys = []string{"proxycommand", "localcommand", "knownhostscommand"}

// sshRuns reads the commands ssh, scp or sftp (name) runs here, given
// its words after its name, and gives each to fed: the commands of -o
// ProxyCommand, LocalCommand and KnownHostsCommand, scp's and sftp's -S
// program and sftp's -D server. It reports a config file the words name
// (-F FILE, -o Include=FILE), which may set any of them: what runs
// cannot be read. ssh's options after its host are read too, up to its
// remote command.
func sshRuns(name string, words []string, fed func(string)) (configFile bool) {
	vals, operands := sshOptions[name].values(words)
	if name == "ssh" && len(operands) > 1 {
		more, _ := sshOptions[name].values(operands[1:])
		vals = append(vals, more...)
	}
	for _, o := range vals {
		switch {
		case o.opt == "-o":
			key, v := sshOption(o.v)
			switch {
			case strings.EqualFold(key, "include"):
				configFile = true
			case slices.ContainsFunc(sshCommandKeys, func(k string) bool { return strings.EqualFold(k, key) }):
				fed(v)
			}
		case o.opt == "-S" && name != "ssh", o.opt == "-D" && name == "sftp":
			fed(o.v)
		case o.opt == "-F":
			configFile = configFile || o.v != "/dev/null" && !strings.EqualFold(o.v, "none")
		}
	}
	return configFile
}

// sshOption splits an -o value, "Key=Value" or "Key Value", as ssh does.
func sshOption(s string) (key, value string) {
	s = strings.TrimLeft(s, " \t")
	k := strings.IndexAny(s, " \t=")
	if k < 0 {
		return s, ""
	}
	key, value = s[:k], strings.TrimLeft(s[k:], " \t")
	if strings.HasPrefix(value, "=") {
		value = strings.TrimLeft(value[1:], " \t")
	}
	return key, value
}
