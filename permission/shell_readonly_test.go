package permission

import "testing"

// TestReadOnlyExcludesCodeAndWrites: lines bash runs code or writes files
// for, through commands the engine takes as read-only, are not read-only
// (read-only lines run without asking in every mode, explore included).
func TestReadOnlyExcludesCodeAndWrites(t *testing.T) {
	for _, c := range []string{
		`echo '$(touch p)' >/dev/null; echo ${_@P}`, // prompt expansion runs $_'s command substitution
		`echo "${_@P}"`,
		`test -v 'a[$(touch p)]'`, // an array subscript is evaluated: its $() runs
		`[ -v 'a[$(touch p)]' ]`,
		`printf -v 'a[$(touch p)]' x`,
		`printf -v x '%s' y`,
		`cat <> /home/u/new`,               // <> opens for writing, creating the file
		`sort --o=/home/u/.bashrc in`,      // GNU long options may be abbreviated
		`sort --output=/home/u/.bashrc in`, // and take their value after "="
		`sort -S 1 --compress-program=sh in`,
		`sort --comp=sh in`,
		`date --set=2020-01-01`,
		`date --se 2020-01-01`,
		`date -us 2020-01-01`,
		`hostname --file=/tmp/name`,
		`hostname -F /tmp/name`,
		`file -C -m magic`,
		`file --compile -m magic`,
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		`echo "${HOME}" ${PWD}`,
		`test -f go.mod && test -d .git`,
		`printf '%s\n' a b`,
		`cat < in.txt`,
		`sort -u -k2 in`,
		`date -u +%s`,
		`hostname -f`,
		`hostname --short`,
		`file -b go.mod`,
	} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
}
