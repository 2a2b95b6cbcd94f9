package permission

// scriptBodyCommands are the commands of the here-documents' bodies and
// here-strings of a line that runs a shell (bash <<EOF, bash <<< 'rm
// x'), which may run them as its script: each one, and each one it
// runs, that is not read-only, as shellSubjects holds them for allow
// rules. ok is false when no command rule covers one: it sets a
// variable whose value a shell runs (PS4, BASH_ENV).
func scriptBodyCommands(line shellLine) (cmds []simpleCmd, ok bool) {
	if len(line.data) == 0 || !runsShell(line) {
		return nil, true
	}
	for _, c := range line.data {
		for _, w := range append([]simpleCmd{c}, wrappedOrNone(c)...) {
			if setsCodeVar(w) {
				return nil, false
			}
			if !w.reading && !readOnlyCmd(w) {
				cmds = append(cmds, w)
			}
		}
	}
	return cmds, true
}

// scriptBodySafety says why the here-documents' bodies and here-strings
// of a line that runs a shell, as its script, touch a dangerous path
// (bash <<< 'echo x > ~/.bashrc'), as dangerousWrite does for the line's
// commands, or "".
func scriptBodySafety(line shellLine, workingDirs []string) string {
	if len(line.data) == 0 || !runsShell(line) {
		return ""
	}
	for _, c := range line.data {
		for _, w := range append([]simpleCmd{c}, wrappedOrNone(c)...) {
			if why := dangerousWrite(w, workingDirs); why != "" {
				return why + " (in a script a shell reads from a here-document or here-string)"
			}
		}
	}
	return ""
}
