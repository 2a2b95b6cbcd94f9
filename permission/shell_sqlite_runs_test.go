package permission

import "testing"

// TestSqliteShellCommandsRun: the sqlite3 shell runs a program for its
// .shell and .system commands (abbreviated too: .sh, .sys), for .once,
// .output, .import and .read given "|COMMAND", and for the SQL
// functions edit() and load_extension(), so "sqlite3:*" allowed
// "sqlite3 app.db '.shell rm -rf x'", which no deny rule saw ("rm:*"
// did not deny it). sqlite3 with a dot-command not known to only read
// or set its output's form (in its arguments, -cmd, or the
// here-document or here-string it reads), with such a function, or
// with -A (an archive's files), now runs what cannot be told from its
// words: every deny and ask
// rule matches it, and no allow rule but "*".
func TestSqliteShellCommandsRun(t *testing.T) {
	denyRulesSee(t, []string{
		"sqlite3 app.db '.shell rm -rf x'",
		"sqlite3 app.db '.system rm -rf x'",
		"sqlite3 app.db '.sh rm -rf x'",
		"sqlite3 app.db '  .SHELL rm -rf x'",
		"sqlite3 -cmd '.shell rm -rf x' app.db",
		"sqlite3 --cmd '.shell rm x' app.db",
		"sqlite3 app.db -A -x",
		"sqlite3 app.db '.once |rm' 'select 1'",
		"sqlite3 app.db '.output |rm x' 'select 1'",
		"sqlite3 app.db '.read |rm'",
		"sqlite3 app.db \"select edit('x', 'rm -rf y')\"",
		"sqlite3 app.db \"SELECT load_extension('./evil')\"",
		"sqlite3 app.db <<'EOF'\n.tables\n.shell rm -rf x\nEOF",
		"sqlite3 app.db <<< '.shell rm -rf x'",
		"/usr/bin/sqlite3 app.db '.shell rm -rf x'",
		"sudo sqlite3 app.db '.shell rm -rf x'",
	}, nil, []string{
		"sqlite3 app.db '.tables'",
		"sqlite3 app.db .schema",
		"sqlite3 -init setup.sql app.db",
		"sqlite3 -header -csv app.db 'select * from t'",
		"sqlite3 ./app.db '.mode column' '.headers on' 'select 1'",
		"sqlite3 app.db 'select count(*) from users'",
		"sqlite3 app.db \"select 'x.shell' from t\"",
		"sqlite3 app.db <<'EOF'\n.headers on\nselect * from t;\nEOF",
	})
	p := Policy{Rules: shellAllowRules(t, "sqlite3"), WorkingDirs: []string{t.TempDir()}}
	for _, line := range []string{
		"sqlite3 app.db '.shell touch /srv/x'",
		"sqlite3 app.db '.output /srv/x' 'select 1'",
		"sqlite3 app.db \"select writefile('/srv/x', 'y')\"",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"sqlite3 app.db '.tables'",
		"sqlite3 app.db < schema.sql",
		"sqlite3 app.db 'create table t(x)'",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
