// Package skill loads agent skills (directories with a SKILL.md) and
// offers them to a model: a prompt that lists the skills of the session's
// active groups, and the read-only "Skill" tool that returns a skill's
// instructions. It follows AgentScope 2.x.
//
//	tk := toolkit.New(nil)
//	_ = tk.AddGroup(toolkit.Group{Name: "repair", Description: "Repair tools."})
//
//	set, _ := skill.NewSet(nil)
//	set.AddDir("", "./skills", &skill.LoaderOptions{ScanSubdirs: true}) // basic: always visible
//	set.AddDir("repair", "./repair-skills", nil)                        // visible while "repair" is active
//	if err := skill.Install(tk, set); err != nil {                      // adds the "Skill" tool
//		log.Fatal(err)
//	}
//	for _, w := range set.Warnings() { // what a configuration check reports
//		fmt.Println("skipped:", w) // e.g. skills/bad/SKILL.md: front matter: required field "name" is missing
//	}
//	prompt, _ := skill.Instructions(ctx, tk, set, "session-1", 0) // "<agent-skills>…" or ""
//
// # SKILL.md
//
// A SKILL.md starts with YAML front matter between two lines of dashes;
// name and description are required, the rest of the front matter is kept
// in Skill.Metadata (at most MaxFrontMatterBytes of it, no mapping over
// MaxMappingKeys keys, aliases making at most about twice the values
// written, MaxFrontMatterValues values at most), and the
// markdown after it is the body the Skill tool returns:
//
//	---
//	name: pdf
//	description: Fill and merge PDF forms.
//	---
//	# PDF
//	Use scripts/fill.py to …
//
// # Decisions where AgentScope is silent or differs
//
//   - Loading never fails: a missing directory, a missing field, bad YAML
//     or an unreadable file skips that skill with a Warning (file and
//     reason), logged once when it first appears. Set.Warnings collects
//     them for a configuration check.
//   - Reload is by modification time and size, checked on every query; only
//     changed files are read again.
//   - A SKILL.md that is a symbolic link out of the loader's directory
//     is skipped with a warning (a link within it is followed): what a
//     skills directory holds is served to the fleet, and it must not
//     reach the worker's other files. Its other files follow no link
//     at all (Skill.Files).
//   - A loaded skill's files are read from the directory its load found,
//     and from no other: the loader's directory is opened as an os.Root,
//     the skill's folder within it (no link leads out), and it must
//     still be that very directory (same device and inode). A folder
//     swapped after the load for a link, or for another directory, is
//     refused with an error until a load finds the new one (a link is
//     never loaded as a skill folder). A skill given in Go is read from
//     its Dir, which is trusted as given; within it the same rules hold.
//   - A directory's cost is bounded, as it is loaded on every query: a
//     scan looks at 10000 directory entries at most and descends
//     MaxScanDepth directories at most, and a loader holds MaxDirBytes
//     of SKILL.md files at most; past that, a warning. A scan reads the
//     tree level by level, each directory's SKILL.md looked for by
//     name first, so a skill folder of many files (node_modules) leaves
//     the skills beside it loaded; the warning names where it stopped.
//   - A skills directory on a mount that stopped answering holds up no
//     caller: a Loader reads on a goroutine of its own, one read at a
//     time shared by the loads made meanwhile, and a load waits
//     LoadWait at most (a Set, LoadWait for all its loaders;
//     FirstLoadWait for a loader's first read), then has
//     the skills last loaded with a warning naming the directory and
//     how long its read has been going; that is logged when first seen
//     and every minute while it lasts. A worker answers MaxServing
//     skill requests at once and refuses the next as busy at once.
//   - Only a file named exactly SKILL.md makes a skill. The body is trimmed
//     of surrounding white space.
//   - No visible skills render "" (2.x returns None). Active groups nil or
//     empty mean "basic only"; Set.All gives every group's skills (2.x's
//     activated_groups=None).
//   - A visible skill whose name repeats replaces the earlier one in its
//     position, with a warning (2.x main).
//   - The Skill tool is listed while a skill of basic or of an active
//     group exists (2.x), in a fleet while one does on some worker. A
//     call of it while it is not listed still runs it (2.x answers
//     ToolNotFoundError, or, while an inactive group has skills,
//     ToolGroupInactiveError naming the group 'basic', the viewer's):
//     with nothing visible it answers SkillNotFoundError. Its failure
//     code is tool_error.
//   - A SKILL.md must be UTF-8 text, its body too: one that is not is
//     skipped with a warning naming the line, rather than sent to the
//     model with bytes no text holds. So must the path of its directory,
//     which the prompt's <dir> and the announcements give as text: a
//     skill in a directory whose name is not UTF-8 is skipped with a
//     warning saying to rename it (a loader's directory so named, one
//     warning on it).
//   - A front matter error names its line in the SKILL.md (counting the
//     lines before the front matter, a BOM aside; CRLF and a lone CR
//     end a line, as in 2.x), e.g.
//     "front matter: invalid YAML: line 2: mapping values are not allowed
//     in this context"; for an error inside a flow or a quoted scalar,
//     the line where it began.
//   - name and description may be YAML numbers, booleans or dates, taken
//     as the text written (1.10, True, 2024-01-01; 2.x takes str() of
//     the value, which makes 1.10 "1.1"); lists and maps are rejected.
//     2.x reads YAML 1.1 (PyYAML), where yes, no, on and off are
//     booleans too, and skips a skill whose name or description is
//     false there as missing (0, 0.0, false, no, off); here those are
//     the text written, as is yes (2.x "True"). Both are trimmed of
//     surrounding white space here, where 2.x keeps it (a quoted value's
//     spaces, the line break ending a "|" block scalar).
package skill
