package permission

// The options (for getopt) of the git subcommands gitMakes reads: the
// short ones that take a value, and the long ones (with "=" those that
// take one).
var (
	gitCloneLong = []string{"origin=", "branch=", "upload-pack=", "reference=", "reference-if-able=",
		"separate-git-dir=", "depth=", "shallow-since=", "shallow-exclude=", "config=", "jobs=", "template=",
		"filter=", "server-option=", "bundle-uri=", "ref-format=", "revision="}
	gitInitLong     = []string{"separate-git-dir=", "template=", "initial-branch=", "object-format=", "ref-format="}
	gitWorktreeLong = []string{"reason="}
)

// gitMakes are the directories and files git subcommand name makes,
// given the words after it: clone's directory (its second operand; the
// repository's name in the current directory without), init's (or the
// current directory), the --separate-git-dir of either, worktree add's
// path and bundle create's file.
func gitMakes(name string, rest []string) []string {
	var out []string
	sep := func(opt, v string) {
		if opt == "--separate-git-dir" {
			out = append(out, v)
		}
	}
	switch name {
	case "clone":
		ops := getopt(rest, "obucj", gitCloneLong, sep)
		if len(ops) > 1 {
			return append(out, ops[1])
		}
		return append(out, ".")
	case "init":
		ops := getopt(rest, "b", gitInitLong, sep)
		if len(ops) > 0 {
			return append(out, ops[0])
		}
		return append(out, ".")
	case "worktree", "bundle":
		ops := getopt(rest, "bB", gitWorktreeLong, nil)
		if len(ops) > 1 && (name == "worktree" && ops[0] == "add" || name == "bundle" && ops[0] == "create") {
			return append(out, ops[1])
		}
	}
	return out
}
