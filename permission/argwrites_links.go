package permission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// symlink is a symbolic link a command of a line makes: name, where
// the link is (under the directories the command may run in), and
// target, where it leads as written (relative to name's directory).
// With copied, name is a copy cp makes of target (relative to the
// current directory), which is a link when target is one.
type symlink struct {
	name, target string
	copied       bool
}

// linksMade are the symbolic links c makes (ln -s, cp -s), and the
// copies cp makes that keep a source's link (cp -a, -d, -P, -r without
// -L or -H): each name the link may get (the last operand, or the base
// name of its target under -t DIR, under the last operand when that is
// a directory, or in the current directory for one operand), under
// each directory c may run in.
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
	symbolic, keeps, follows := false, false, false
	operands := getopt(c.args[1:], copyShort[name], copyLong[name], func(opt, v string) {
		switch opt {
		case "-t", "--target-directory":
			dirs = append(dirs, v)
		case "-s", "--symbolic", "--symbolic-link":
			symbolic = true
		case "-a", "--archive", "-d", "-P", "--no-dereference", "-r", "-R", "--recursive":
			keeps = true
		case "-L", "-H", "--dereference":
			follows = true
		}
	})
	copied := name == "cp" && !symbolic && keeps && !follows
	if !symbolic && !copied || len(operands) == 0 {
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
	var pairs [][2]string
	if named {
		// ln -s TARGET NAME, or into NAME/ when it is a directory
		pairs = append(pairs, [2]string{dirs[0], targets[0]})
	}
	for _, d := range dirs {
		for _, t := range targets {
			pairs = append(pairs, [2]string{filepath.Join(d, filepath.Base(t)), t})
		}
	}
	places := c.dirs
	if len(places) == 0 {
		places = []string{""} // the shell's own
	}
	var out []symlink
	for _, d := range places {
		for _, p := range pairs {
			l := symlink{name: underDir(d, p[0]), target: p[1], copied: copied}
			if copied {
				l.target = underDir(d, p[1])
			}
			out = append(out, l)
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
// symbolic links made on its line before it (c.links; a copy of a
// source that is a link, which holds the source's text), which do not exist yet to be resolved: "ln -s /srv out && echo x > out/f" writes
// /srv/f. The last link made is followed first, so a link through
// another leads on through it.
func throughLinks(c simpleCmd, paths, workingDirs []string) []string {
	out := paths
	for i := len(c.links) - 1; i >= 0; i-- {
		l := c.links[i]
		name := absPath(l.name, workingDirs)
		target := l.target
		switch {
		case l.copied:
			target = absPath(target, workingDirs)
			if fi, err := os.Lstat(target); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				continue // a copy of a file, or of a directory
			}
			// The copy holds the link's text: a relative one leads
			// from the copy's directory, not the source's.
			if text, err := os.Readlink(target); err == nil {
				target = text
				if !filepath.IsAbs(text) {
					target = filepath.Join(filepath.Dir(name), text)
				}
			}
		case !filepath.IsAbs(expandHome(target)) && !shellExpands(target) && !strings.HasPrefix(target, "~"):
			target = filepath.Join(filepath.Dir(name), target)
		}
		for _, p := range slices.Clone(out) {
			// Cleaned, "x/../f" would be "f", past the link: the
			// kernel takes ".." from where x leads.
			for _, q := range []string{absPath(p, workingDirs), keepDotDot(p, workingDirs)} {
				if rest, ok := strings.CutPrefix(q, name); ok && (rest == "" || rest[0] == '/') {
					out = append(out, target+rest)
					break
				}
			}
		}
	}
	return out
}

// keepDotDot is p absolute (under the first working directory) without
// its "." and empty elements, but with its "..": "x/./../f" is
// "WD/x/../f".
func keepDotDot(p string, workingDirs []string) string {
	p = expandHome(p)
	if !filepath.IsAbs(p) && len(workingDirs) > 0 {
		p = workingDirs[0] + "/" + p
	}
	parts := strings.Split(p, "/")
	kept := parts[:1]
	for _, e := range parts[1:] {
		if e != "" && e != "." {
			kept = append(kept, e)
		}
	}
	return strings.Join(kept, "/")
}
