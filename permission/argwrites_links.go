package permission

import (
	"path/filepath"
	"slices"
	"strings"
)

// symlink is a symbolic link a command of a line makes: name, where
// the link is (under the directories the command may run in), and
// target, where it leads as written (relative to name's directory).
type symlink struct{ name, target string }

// linksMade are the symbolic links c makes (ln -s, cp -s): each name
// the link may get (the last operand, or the base name of its target
// under -t DIR, under the last operand when that is a directory, or in
// the current directory for one operand), under each directory c may
// run in (inDirs).
func linksMade(c simpleCmd) []symlink {
	if e, ok := expanded(c); ok {
		c = e
	}
	if len(c.args) == 0 {
		return nil
	}
	name := filepath.Base(c.args[0])
	if name != "ln" && name != "cp" {
		return nil
	}
	var dirs []string
	symbolic := false
	operands := getopt(c.args[1:], copyShort[name], copyLong[name], func(opt, v string) {
		switch opt {
		case "-t", "--target-directory":
			dirs = append(dirs, v)
		case "-s", "--symbolic", "--symbolic-link":
			symbolic = true
		}
	})
	if !symbolic || len(operands) == 0 {
		return nil
	}
	targets, named := operands, false
	switch {
	case len(dirs) > 0:
	case len(operands) == 1:
		dirs = []string{"."}
	default:
		targets = operands[:len(operands)-1]
		dirs = operands[len(operands)-1:]
		named = len(targets) == 1
	}
	var out []symlink
	if named {
		// ln -s TARGET NAME, or into NAME/ when it is a directory
		for _, n := range inDirs(c, dirs) {
			out = append(out, symlink{n, targets[0]})
		}
	}
	for _, d := range dirs {
		for _, t := range targets {
			for _, n := range inDirs(c, []string{filepath.Join(d, filepath.Base(t))}) {
				out = append(out, symlink{n, t})
			}
		}
	}
	return out
}

// followLinks gives each of cmds the symbolic links made before it
// (made, then those of the commands before it, and with deep, as for a
// line's commands, of the commands they run: wrapped); with loop (a
// loop's body, a function's, which may run again), those all of them
// make.
func followLinks(cmds []simpleCmd, made []symlink, deep, loop bool) {
	each := make([][]symlink, len(cmds))
	for i, c := range cmds {
		each[i] = linksMade(c)
		if deep {
			for _, w := range wrappedOrNone(c) {
				each[i] = append(each[i], linksMade(w)...)
			}
		}
	}
	if loop {
		made = slices.Concat(append([][]symlink{made}, each...)...)
	}
	for i := range cmds {
		cmds[i].links = slices.Clone(made)
		if !loop {
			made = append(made, each[i]...)
		}
	}
}

// throughLinks are paths c writes, and where each may lead through the
// symbolic links made on its line before it (c.links), which do not
// exist yet to be resolved: "ln -s /srv out && echo x > out/f" writes
// /srv/f. The last link made is followed first, so a link through
// another leads on through it.
func throughLinks(c simpleCmd, paths, workingDirs []string) []string {
	out := paths
	for i := len(c.links) - 1; i >= 0; i-- {
		l := c.links[i]
		name := absPath(l.name, workingDirs)
		target := l.target
		if !filepath.IsAbs(expandHome(target)) && !shellExpands(target) && !strings.HasPrefix(target, "~") {
			target = filepath.Join(filepath.Dir(name), target)
		}
		for _, p := range slices.Clone(out) {
			if rest, ok := strings.CutPrefix(absPath(p, workingDirs), name); ok && (rest == "" || rest[0] == '/') {
				out = append(out, target+rest)
			}
		}
	}
	return out
}
