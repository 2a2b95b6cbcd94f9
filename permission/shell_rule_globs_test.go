package permission

import "testing"

// TestDenyRuleSeesGlobbedNames: a command name with a pattern the shell
// replaces with a file's name (/bin/r[m], /bin/r?, *m in a directory
// holding rm) was matched as written, so a deny rule on rm did not
// match what ran; such a name may be any command, as $X is, and matches
// every deny and ask pattern. A case clause's pattern is no name.
func TestDenyRuleSeesGlobbedNames(t *testing.T) {
	denyRulesSee(t, []string{
		"/bin/r[m] -rf x",
		"/bin/r? -rf x",
		"/usr/bin/r* -rf x",
		"r[m] -rf x",
		"*m -rf x",
		`/bin/r[m] ")" -rf x`,
		"sudo /bin/r[m] -rf x",
		"command /bin/r? -rf x",
		"xargs /bin/r[m] < list",
		"/usr/bin/gi[t] push", // it may be rm
	}, nil, []string{
		"ls *.go",
		"echo '*' x[1]",
		"[ -f x ] && echo y",
		"case a in a) echo a;; *) echo b;; esac",
		"case a in ?) echo a;; esac",
		"case a in a) echo a;; * ) echo b;; esac",
		"find . -name '*.go' -exec grep -l x {} +",
	})
}
