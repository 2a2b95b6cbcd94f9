// Package permission decides who may run what: per-session modes and
// allow/deny/ask rules, the AgentScope 2.x decision table, one-shot human
// approvals bound to a call's input, and listings that hide what a session
// can never run. Policies and approvals live in a Store: MemoryStore in
// one process, KVStore (JetStream KV) for a fleet, so every worker agrees
// and approvals survive restarts.
//
//	st, err := permission.NewKVStore(ctx, js, nil) // or permission.NewMemoryStore()
//	if err != nil {
//		log.Fatal(err)
//	}
//	guard, err := permission.NewGuard(st, &permission.Options{
//		Mode:        permission.ModeDefault,
//		Rules:       []permission.Rule{{Tool: "drop_database", Behavior: permission.Deny}},
//		WorkingDirs: []string{"/srv/project"},
//	})
//	if err != nil {
//		log.Fatal(err) // an unknown mode or an invalid rule
//	}
//	tk.Use(permission.Middleware(guard)) // ALLOW runs, DENY → denied, ASK → approval_required
//
//	// The agent's call ends approval_required; a human approves it …
//	_, err = guard.Approve(ctx, "", "call-42", "alice")
//	// … and the agent sends the same call again: it runs, once.
//
//	_ = guard.Allow(ctx, "session-1", "execute_shell_command:npm test:*")
//	_ = guard.SetMode(ctx, "session-1", permission.ModeAcceptEdits)
//	schemas, _ := guard.Schemas(ctx, tk, "session-1", 0) // without the tools it can never run
//
// # The decision table
//
// Decide applies, in order: deny rules, ask rules, the read-only fast
// path, the tool's own check, allow rules, then the mode's fallback; the
// table is on Decide. The per-tool-kind behaviour is one table (kinds, in
// tools.go):
//
//	kind (names)                                read-only           own check                                    rule patterns
//	function (any other name)                   Tool.ReadOnly       ASK                                          none (name-level only)
//	MCP (mcp__<server>__<tool>)                 readOnlyHint (not   ASK "MCP tools must be explicitly allowed"   none
//	                                            in DEFAULT mode)
//	reset_tools                                 never               ALLOW                                        none
//	Skill                                       always              ALLOW                                        none
//	execute_shell_command ("command")           read-only commands  safety ASK for dangerous commands; in        command prefix "git push:*",
//	                                                                ACCEPT_EDITS mkdir/touch/rm/rmdir/cp/mv/    "make *", wildcard, or exact
//	                                                                sed -i inside the working dirs ALLOW
//	execute_python_code ("code")                never               ASK                                          none
//	view_text_file ("file_path" or "path")      always              ALLOW                                        path glob
//	write_text_file, insert_text_file (same)    never               safety ASK for dangerous paths; in           path glob
//	                                                                ACCEPT_EDITS inside the working dirs ALLOW
//
// Read-only shell commands are ls, pwd, cat, head, tail, wc, echo, grep,
// find (without -exec/-delete), git status/log/diff/show/… and the like,
// without output redirection (<> included) or command substitution (and
// ${NAME@P}, printf -v, test -v, and bash's $[…], ${!NAME}, ${NAME[…]}
// and ${NAME:OFFSET}, which read a value as a name or an expression,
// whose array subscripts run it; long
// options count abbreviated, as GNU takes them; a command whose arguments
// are checked is not read-only with an argument the shell rewrites:
// $VAR, ${VAR:-x}, $'…', {a,b}, or a pattern *, ?, […] that names any
// files, `uniq *` among them); a line of several
// commands (;, &&, ||, |, &) is read-only when every command is, as bash
// and as dash split it ("&>" is a redirection to bash, "&" and ">" to
// dash: `ls &>/dev/null touch x` runs touch; a here-document whose
// body bash, which joins a line ending with a backslash to the next
// before it looks for the delimiter, and dash end after different lines
// is an unparsable line, and so is one whose delimiter has a newline,
// which dash finds across two lines and bash never). Dangerous
// (safety) commands: command or process substitution, an unparsable line,
// rm of /, the home directory or a top-level directory, mkfs, dd to a
// device, and any write that touches a dangerous path, by a command
// of the line or one it runs (sh -c 'echo x > ~/.bashrc; ls', bash <<<
// 'echo x > ~/.bashrc' and a here-document a shell reads; brace
// expansions expanded, at most 256 words: more is a safety ask), through
// a redirection, an argument that looks like a path (not of a command
// read-only but for its redirections, which reads it: head -c 9
// /dev/urandom > f; nor the pattern after rsync's --exclude and
// --include, tar's --exclude or find's -path, -name and the like: rsync
// --exclude .git) or one that names a file written (sort -o~/.bashrc,
// dd of=/etc/passwd, curl -o .git/hooks/pre-commit URL; the arguments
// read so are listed below, with allow rules). Dangerous paths:
// shell start-up and credential files (.bashrc, .profile, .zshrc,
// .gitconfig, .netrc, .npmrc, …), anything inside .git, .ssh, .gnupg,
// .aws, .kube, .docker, .vscode or .idea, system trees (/etc, /usr, /bin,
// /dev except /dev/null, …) and network (UNC) paths. ACCEPT_EDITS takes
// sed -i only with scripts given on the command line that edit the lines
// (s without the e and w flags, d, p, …), never with a command that runs
// or writes elsewhere (e, w, r, -f FILE).
//
// The read-only reading is of the command line alone. git's read-only
// subcommands run what the repository's own configuration names
// (core.fsmonitor for status and diff, diff.external, a textconv
// driver), and git status may refresh .git/index: a repository whose
// .git/config came from elsewhere (an archive, a copied tree; a clone
// writes its own) can run a program through them with no approval. A
// write inside .git is a safety ask, so the model cannot set that up;
// the workspace's repository configuration is trusted as the operator's.
//
// Path globs: "*" and "?" stay within one path segment, "**" crosses
// segments, [seq] and [!seq] match one character of seq or not (as
// fnmatch reads them: ranges a-z, "]" first is itself, an unclosed "["
// too; a negated set never matches "/"), a pattern without "/" matches the base name ("*.env"), a
// pattern ending in "/" matches everything below. Paths are made absolute
// ("~" expanded, relative to the first working directory, a ".." after a
// symbolic link taken to the parent of its target) before matching,
// and so are patterns with a "/" that do not start with "*"; symbolic
// links are resolved when comparing with working directories, and a path
// that leads elsewhere through a link is matched as both (a deny or ask
// rule on either applies; an allow rule must cover both). So is a path
// read as a tool that cleans it first reads it (the built-in file tools:
// ".." lexical, "~" a directory of that name): "~/../secrets/x" is also
// secrets/x of the first working directory. A call id that
// is pending with one input keeps it until it is decided or expires: an
// approval is for the input the approver saw, and a call sent under that
// id with another input is not offered for approval (its final has no
// approval key: send it with a new id).
//
// # Approvals
//
// An ASK ends the call at once with toolkit.CodeApprovalRequired and
// records a Pending call (session, call id, tool, input digest, input,
// suggested rules); the call id is the call's key (toolkit.ToolCall.Key),
// which a client's retry of it under an attempt id keeps. Guard.Approve turns it into an Approval bound to the
// session, the call id, the tool and the Digest of the input. When the
// agent re-sends that call, the middleware consumes the approval (exactly
// once, even with several workers racing: the store deletes only the
// revision it read) and runs it. An approval presented with another tool
// or input is rejected with toolkit.CodeDenied and stays unused. Approve
// claims the pending call (the store deletes only the revision it read)
// before it stores the approval: of two people approving the same call at
// once, one approves it and the other gets ErrNoPending.
//
// Guard.Deny refuses a pending call instead, as AgentScope's user who
// rejects a tool call does: the call is no longer pending (nor listed),
// and sent again with the same session, id, tool and input it ends
// toolkit.CodeDenied with the refuser's reason (MetaPermissionReason
// wire.PermissionUserDenied), every time, rather than asking again,
// until the refusal expires as an approval does. Another input or tool
// under the id asks as before (its approval replaces the refusal), and
// another id is not affected. The refusal is the approval's record,
// marked Approval.Denied, under the approval's key: a worker of a build
// before Deny decodes approvals strictly and refuses that record, so to
// it the call has no approval and asks again; it never runs.
//
// Guard.ListPending, what a person reads before approving, leaves out a
// pending call that its session's policy surely lets run since it asked
// (a rule added for it, ModeBypass): it waits for nobody, and the re-sent
// call runs without an approval. It is still recorded, and approvable,
// until it runs or expires.
//
// # Decisions where AgentScope is silent or differs
//
//   - Approvals are consulted only when the policy answers ASK: a deny
//     rule added after an approval, or a switch to ModeExplore or
//     ModeDontAsk, still wins (2.x lets a confirmed call skip the engine).
//   - A call with an empty id can be allowed by rules but not approved.
//   - Safety asks follow the 2.x table: an allow rule cannot override them
//     (so they are "bypass-immune" to rules), ModeBypass lets them run,
//     ModeDontAsk denies them. A one-shot approval lets them run.
//   - For an allow rule to allow a shell line it must cover every command
//     of the line that is not read-only; one matching command is enough for
//     a deny or ask rule. Variable assignments before a command (PATH=…;
//     LD_PRELOAD=… cat) make it not read-only, and an allow rule must name
//     them ("NODE_ENV=test npm test:*"); deny and ask rules match the
//     command without them. A variable exported earlier on the line
//     (export NAME=VALUE, declare -x or typeset -x NAME=VALUE,
//     NAME=VALUE and then export NAME, any assignment after set -a) is
//     in the environment of the commands after it and of those they
//     run, as one set before a command is: where this page reads a
//     variable set before a command (UV_PROJECT=, GOFLAGS=,
//     npm_config_script_shell=, CARGO_TARGET_DIR=, …) it reads one
//     exported before it too ("export UV_PROJECT=/srv/other; uv run
//     pytest" asks as "UV_PROJECT=/srv/other uv run pytest" does),
//     though the rule that covers the export is the one that names it;
//     a plain NAME=VALUE, not exported, reaches no command. The ">" that dash reads after the "&" of
//     "&>" ("make &> log": "make &" and "> log") is covered by the rules
//     for the line's other commands when its file is inside, as bash's
//     reading is. An output redirection (>, >>, &>, <>) to a
//     file outside the working directories (symbolic links resolved;
//     with none, outside the shell's directory: an absolute path, "~",
//     "..") or to one the shell names ($OUT) is the write
//     write_text_file would ask for: a rule that names the command does
//     not cover it ("ls:*" does not allow "ls > /srv/other/x"; only "*"
//     or a name-level rule does, and no rule is suggested for it), so it
//     falls to the mode. So is a file there that a command's arguments
//     name for writing, as the command reads its options (clusters,
//     abbreviated long options): find's -fprint, -fprint0, -fprintf
//     and -fls; sort -o; git's --output (log, diff, show, …),
//     format-patch's -o and --output-directory (without, the current
//     directory) and archive's -o, after git -C DIR under DIR, and for
//     a git command that is not read-only the directories of -C and
//     --work-tree and the one holding --git-dir's ("git -C ../other
//     reset --hard"), and what git clone, init, worktree add and bundle
//     create make (a clone's or init's directory, without one the
//     current directory); go's -o, -coverprofile, -cpuprofile and the
//     like (after go -C DIR, under DIR), and the directories GOPATH
//     (each of its list), GOBIN, GOMODCACHE and GOCACHE name in go's
//     environment; the -o of cc, gcc, clang and
//     ld, and of strace, ltrace and GNU time; script's typescript and
//     logs; where tar (gtar and bsdtar too) extracts (-C DIR, or the
//     current directory) and the archive it creates (-f), and where unzip extracts (-d DIR, or the
//     current directory), with tar -P (--absolute-names) or unzip -:,
//     which keep a member's "/" or "..", a file outside; the destination of rsync and scp when not
//     another host's (HOST:PATH), rsync's --log-file, batch and -T, and
//     its sources with --remove-source-files; where patch writes (-d
//     DIR, or the current directory; -o's file) and the prefix split
//     and csplit write to; the files of a sed script's w and W commands
//     and s///w (its regular expressions read as GNU sed reads them, a
//     bracket expression whole: s/[/]/x/w FILE), and of an awk program's print > "FILE" and >> (one it
//     computes, print > $1, is outside), and those of gawk's -d, -o and
//     -p; tee's files; the second operand of uniq and xxd, the -o
//     file of iconv and tree, openssl's -out and -keyout (--out and
//     -out=FILE too; also -writerand, -sess_out, -keylogfile, -reqout,
//     -respout, -CAserial, -outdir's directory, and with
//     -CAcreateserial the CA's serial file, -CA's file with its
//     extension made .srl), the files
//     and directories gofmt -w (goimports -w) rewrites, and those
//     prettier --write (-w), black (not with --check, --diff or -c),
//     ruff check --fix (--fix-only, --add-noqa; not with --diff), ruff
//     format (not with --check or --diff), isort (not with
//     --check-only, --diff or --stdout) and eslint --fix rewrite (ruff
//     and eslint with no operand the current directory), ruff's and
//     eslint's -o (--output-file) and cache files (black, isort, ruff
//     and pip, below, and gzip's, also as python -m runs them: python
//     -m black FILE; the archive python -m zipfile and tarfile create
//     (-c) and the directory they extract into (-e; tarfile's, without
//     one, the current directory; without --filter data or --filter
//     tar, a file outside as well, as with tar -P, for a Python before
//     3.14 keeps a member's "/" and ".."), python -m json.tool's second
//     operand; and pip's as uv pip, with uv pip compile's -o, --output-file,
//     and the site uv pip install, sync and uninstall change with
//     --system, a directory not known here, or --python (-p): the path
//     it names, or one not known here for a version it finds; the
//     directory uv venv makes (its operand, .venv without one); uv's
//     global options read before its subcommand or after it, as uv
//     reads them: uv -q pip install --target DIR writes DIR, a relative
//     path under --directory's DIR, and --cache-dir's directory is
//     written, uvx's too; the variables set before uv read as the
//     options they stand for, UV_WORKING_DIR= as --directory,
//     UV_PROJECT= as --project, UV_CACHE_DIR= as --cache-dir,
//     UV_CONFIG_FILE= as --config-file, and UV_PROJECT_ENVIRONMENT=DIR
//     written but by uv tool, self and help; with uv --config-file FILE
//     or UV_CONFIG_FILE=FILE, whose uv.toml may set pip's target, prefix
//     or system and the cache directory, a file outside, as with curl -K);
//     zip's archive (and
//     -O's, -b's temporary directory, also glued, -bDIR, -rbDIR, or
//     long, --temp-path=DIR, abbreviated, and with -m the files it
//     adds, which it removes); cmake's
//     build directory (-B, --build, or the current one it configures)
//     and install prefix (--install-prefix, -DCMAKE_INSTALL_PREFIX= or
//     -D CMAKE_INSTALL_PREFIX=, --install's --prefix), and the files cmake -E's commands write or
//     remove (rm, remove_directory, make_directory, touch, rename, the
//     copy commands' destination, create_symlink's link, both files of
//     create_hardlink, the archive of tar c); protoc's --LANG_out directories and -o
//     file; tsc's --outDir, --outFile, --declarationDir and -p project
//     (without --outDir or --outFile, and no --noEmit, the sources
//     given, beside which it writes .js), --generateTrace directory and
//     --generateCpuProfile file; javac's -d, -s, -h and -Xstdout
//     (without -d, the sources, beside which it writes .class); pip's
//     --target (-t), --prefix and --root, download's -d and wheel's -w,
//     its --log (--log-file, --local-log) and --report, and the user's
//     site install --user writes (~/.local); cargo's
//     --target-dir (--config build.target-dir=), install --root (and
//     CARGO_TARGET_DIR, CARGO_BUILD_TARGET_DIR, CARGO_INSTALL_ROOT and
//     CARGO_HOME in its environment) and
//     the directory cargo new and init make (init's, without one, the
//     current directory); the
//     destination of cp, install
//     and ln (-t DIR or the last operand; install -d's directories), the
//     files a hard link is made to (ln without -s, cp -l: a write
//     through the link changes them), and every file of mv; dd's of=; the files rm, rmdir, unlink, touch, mkdir, chmod, chown,
//     chgrp, truncate and shred change or remove (their operands, but
//     for chmod's mode, chown's owner and chgrp's group), those sed -i
//     edits, those gzip, xz, bzip2, zstd and the like (pigz, pbzip2,
//     lzip, lzop, brotli) replace (their
//     operands, without -c, -l or -t; zstd's and brotli's -o file) and lz4 writes
//     (its second operand, or with one, or -m, its operands; none with
//     -c, -t or --list), and the starting points of find -delete (without, the
//     current directory); curl's -o, --output-dir, -D, -c, --trace and
//     the like, and -w's %output{FILE} (-O: the current directory);
//     wget's -O, -o, -a, -P, --save-cookies and the like, also as -e
//     output_document=FILE (without -O, the current directory); with
//     curl -K FILE (--config) or wget --config=FILE, whose file may name
//     any output, a file outside.
//     ("sort:*" does not allow "sort -o /srv/x f", nor "curl:*" "curl -o
//     ~/x URL", nor "rm:*" "rm -rf /srv/x".) A path written through a
//     symbolic link that a command before it on the line (or in a
//     script it runs; any of a loop's) makes, ln -s or cp -s, which
//     does not exist yet to be resolved, is checked where the link leads
//     too ("ln -s /srv out && echo x > out/f" writes /srv/f; "ln -s
//     /srv/a x && cd x && ls > ../f", whose ".." the kernel takes from
//     /srv/a, /srv/f), and so is
//     one through a copy cp makes of a link (cp -a, -d, -P, -r without
//     -L or -H: "cp -a out o && echo x > o/f", out leading to /srv; a
//     relative link's copy from the copy's directory). A relative path written
//     after a cd or pushd on the line (or in a script it runs) is checked under
//     the directory that leads to as well as under the shell's (the cd
//     may fail, or run in a subshell): "cd /srv && ls > f" writes
//     /srv/f, and "cd /var && echo x > lib/dpkg/status" is a safety
//     ask; after one to a directory not known here (cd $X, cd -, cd, cd
//     ~, popd, a pattern, with CDPATH set one not starting with "/",
//     "./" or "../", such as .x) it is outside. A ".." in a
//     cd's directory leads where the shell takes it (cd -L: "cd link &&
//     cd .." is back where "cd link" began) and where the kernel does
//     (the parent of link's target, where cd -P goes). On a line (or
//     in a script it runs) with a loop or a function's definition, whose
//     commands may run again after the cds below them, each command is
//     checked where any of its cds may lead too ("for i in 1 2; do :;
//     touch f; cd /srv; done" touches /srv/f). The same holds
//     for a command env -C DIR, sudo -D DIR, cmake -E chdir DIR or find
//     -execdir (under its starting points) runs in another directory, and for one sudo -R
//     DIR (--chroot) runs under another root, a directory not known
//     here. A command joined by
//     && to a literal cd or pushd right before it runs only where that
//     led ("cd sub && make && cd .. && ls > f" writes ./f, "cd sub &&
//     rm -rf ../build" ./build), as does one joined by && to a group
//     whose last command is such a cd ("{ cd sub; } && ls > ../f"; a
//     brace quoted, escaped or after a redirection is a command of that
//     name, not the group's); a
//     newline right after && joins the command on the next line to
//     it, as the shell reads it. After a list ending with "|| exit" (or
//     "|| exit N", with no redirection: >&5 fails where 5 is not open,
//     and exit does not run) the shell goes on only where the list
//     succeeded ("cd sub || exit 1; ls > ../f" writes ./f), and after
//     set -e (-o errexit, by a set with no redirection and only options
//     bash's set takes: "set -Ze" turns nothing on) only where a cd
//     standing alone in its list led ("set -e; cd sub; ls > ../f"),
//     unless a command naming set or errexit may have turned it off;
//     both on a line read once, without
//     substitutions or compound commands (loops, if, case, groups,
//     functions, !), inside which exit may end a subshell only and
//     errexit not apply. A line that is one subshell and nothing else
//     is read as the list inside it, whose cds are the subshell's ("(cd
//     sub && make > ../log)" writes ./log). Any other command after ;, ||, & or a newline, in a
//     pipeline, after a cd in a subshell, a group (but for its last
//     command) or another shell runs where the shell was before the
//     cd too, and so does every command of a line with parentheses,
//     [[ … ]], or a command that may change what cd does or where the
//     shell is (function, alias, trap, source, shopt, enable, a name
//     the shell computes). One inside them is the command's ("make:*" allows "make > build.log",
//     "sort:*" "sort -o s.txt f", with "cd:*" "cd sub && make >
//     log"). In explore mode no redirection runs
//     (the line is not read-only), and one to a dangerous path is a
//     safety ask whatever the rules. The commands of command and process
//     substitutions ($(…), `…`, <(…)) are the line's commands too, for
//     every rule. Deny and ask rules (and the safety checks) also see the
//     commands a command runs: behind a wrapper (sudo, doas, pkexec, env,
//     nice, nohup, setsid, timeout, xargs, command, exec, time, coproc,
//     taskset, chrt, unshare, nsenter, strace, ltrace, catchsegv,
//     firejail, valgrind, unbuffer, proxychains, faketime, …; their options read as getopt reads them: clusters,
//     abbreviated long options, strace -o '|cmd') or a keyword (then,
//     do, !, "(", "{"), as the script of sh -c, eval, trap, alias or
//     mapfile's -C callback, as the script a shell with no -c and no
//     script file (or /dev/stdin), source /dev/stdin, and su, sudo -s
//     or -i, doas -s and pkexec without a command, read from their
//     input when the line writes it (echo
//     'rm x' | bash, printf 'rm x\n' | sh, echo -e and dash's echo
//     escapes read both ways, printf's %s and %b, cat <<EOF | bash) (and
//     of su, runuser, script and flock -c, sg's command string, watch's
//     words joined as sh -c joins them, a git configuration value that
//     git runs: git -c core.pager='…', alias.x='!…', GIT_PAGER=… git), as
//     find's -exec, as go's -exec and -toolexec and go vet's -vettool
//     (on the line or in GOFLAGS, env's assignments included), as the
//     command of git rebase --exec (-x), git submodule foreach, git
//     bisect run, git filter-branch's filters and --setup, git difftool
//     --extcmd, git grep -O, git send-email's --sendmail-cmd, --to-cmd,
//     --cc-cmd and --header-cmd, --upload-pack and --receive-pack, as tar's
//     --to-command, --use-compress-program (-I), --info-script (-F),
//     --new-volume-script, --rsh-command and --checkpoint-action=exec=
//     (also in TAR_OPTIONS), rsync's -e (--rsh, RSYNC_RSH), rg's --pre
//     and --hostname-bin, zip's -TT (--unzip-command), and make's SHELL=
//     (also in MAKEFLAGS), as the command of cmake -E env, time and
//     chdir, as a
//     busybox applet, as the program bash's hash -p
//     gives a name, in the body of a function or a
//     case clause written on the line, by the base name of its path
//     (/bin/rm is rm), as git's subcommand without git's own options
//     before it (git -C dir push is git push; so is git-push), as the
//     subcommand of npm, pnpm, yarn, docker, podman, kubectl, helm,
//     cargo, pip, pip3, terraform and gh without their global options
//     before it (npm --loglevel silent publish is npm publish, kubectl -n
//     ns delete is kubectl delete, cargo +nightly publish is cargo
//     publish; an option not known to take a value is read both as taking
//     the next word and as not), as the module python -m runs (python3
//     -m pip install x is pip install x; so is uv pip install x, and
//     uv -q pip install x without uv's global options), as the
//     command a package runner runs after its options, its version aside
//     (npx eslint@8 . is eslint .; npm exec, pnpm dlx and exec, yarn dlx
//     and exec, bunx, uvx, uv run, uv tool run, pipx run; the script of
//     npx -c and npm exec --call, and pnpm dlx -c's words as one), and
//     as its brace expansions make it ({sudo,rm,x}
//     runs rm). A command another runs (behind a wrapper, xargs or a
//     package runner, as
//     find's or go's -exec, git rebase --exec, tar --to-command, rsync
//     -e, split --filter, sort --compress-program, ssh's (scp's, sftp's)
//     -o ProxyCommand and LocalCommand, scp -S, rg --pre, make SHELL=,
//     npm's --script-shell (npm_config_script_shell=, and
//     --script_shell= or --SCRIPT-SHELL=, which npm passes to the npm
//     a script runs; pnpm's --config.script-shell=), a script of sh -c, eval
//     or a git configuration value, the body of a here-document or
//     here-string on a line that runs a shell: bash <<EOF, a script
//     echo or printf pipes to a shell) is a command of the line for allow
//     rules too, as those of "a && b" are: "find:*" allows "find . -exec
//     rm x {} ;", "xargs:*" "xargs rm" and "sudo:*" "sudo rm x" only with
//     a rule that also covers "rm x" (or when it only reads: "find . -exec
//     cat {} ;"; not a script's command whose script has a substitution:
//     bash -c 'echo $(date)'); a prefix rule on the running command that
//     reaches the command it runs names it and covers it ("sudo rm:*",
//     "xargs rm:*", "timeout 10 make:*"), so does a rule that is the whole
//     command as written, and the rules suggested for such a line cover
//     it ("find:*" and "rm:*"; "bash:*" and "rm:*" for bash <<< 'rm -rf
//     x', each command of a here-document's script with its own rule).
//     Another reading of the same command (/bin/rm as rm, git
//     -C dir push as git push, npm's subcommand without its options,
//     python -m's module, the command after a keyword) is covered by the rule that covers the
//     command as written. A line that cannot be read (unparsable, or
//     substitutions, scripts or wrappers nested more than 8 deep), and a
//     command whose name the shell computes ($X, ${x:-rm}, $(echo rm), a
//     pattern such as /bin/r[m] or r?), and a command that sets a
//     variable whose value a shell runs or that makes it run code
//     (BASH_ENV, ENV, ZDOTDIR, PROMPT_COMMAND, PS0 to PS4, SHELLOPTS,
//     BASHOPTS, BASH_FUNC_NAME%%; before its words, as a bare assignment,
//     or through env, export, declare, typeset, local or readonly, or
//     by printf -v, read, mapfile or readarray: BASH_ENV=f bash -c …,
//     PS4='$(…)' bash -x, printf -v PS4 …; and in a here-document's
//     body on a line that runs a shell: bash <<EOF), matches every
//     deny and ask pattern of the tool and no allow pattern but "*"; so
//     does a command whose commands cannot be told from its words (GNU
//     parallel and sem, which run their input lines too; gdb and lldb,
//     which run what their commands say, -ex 'shell …' among them; git
//     with -c include.path, core.hooksPath or protocol.*.allow, --config-env of
//     a command's key, --exec-path=DIR, GIT_CONFIG_*; a shell that
//     reads its script from a file or a command whose output the line
//     does not hold: bash < f, cat f | bash, curl … | sh, echo "$X" |
//     sh; awk code that calls system() or pipes to or from a command,
//     print | "cmd" and "cmd" | getline, sed's e command and the e flag
//     of s, an awk or sed program read from a file, -f, or gawk's
//     @load and @include; sqlite3 with a dot-command (in its arguments,
//     -cmd, or a here-document or here-string it reads) that is not
//     known to only read or set its output's form (.shell, .system,
//     .once |cmd, .sh, .output FILE, …), with SQL that runs a program or
//     writes a file (edit(), load_extension(), writefile(), ATTACH,
//     VACUUM INTO), or with -A; make --eval; an ssh config file named by -F;
//     npm told to read a config file,
//     which may set its script-shell, by --userconfig or --globalconfig
//     (npm_config_userconfig=, npm_config_globalconfig=, or
//     npm_config_prefix=DIR, whose etc/npmrc is its global one, in its
//     environment; the project's .npmrc is trusted as its package.json is); npm,
//     pnpm or yarn told to run the scripts of a project outside the
//     working directories (npm --prefix DIR or -C DIR, pnpm --dir DIR
//     or -C DIR, yarn --cwd DIR, or without one the directory a cd
//     before it may have led to: cd /srv/other && npm test; one inside
//     is the workspace's), npx (--prefix DIR) and bunx running a command
//     there, whose node_modules/.bin comes first (cd /srv/other && npx
//     eslint .); make running the recipes of a directory or
//     makefile outside them (make -C DIR, -f FILE, FILE under -C's
//     DIR, or without -C the directory a cd before it may have led
//     to: cd /srv/other && make), and go test, go run or go generate
//     running the code of a module outside them (go -C DIR, or after
//     cd /srv/other), and cargo building a project outside them, whose
//     build.rs it runs (--manifest-path FILE, install --path DIR; add
//     --path DIR, whose build.rs every later build runs; -C
//     DIR, or the directory a cd before it may have led to, whose
//     .cargo/config.toml it reads: cd /srv/other && cargo build),
//     pip install and npm install (i, add, link) installing a package
//     from a path outside them, whose setup.py and build backend pip
//     runs and whose code the workspace's then imports (pip install
//     DIR, -e DIR, NAME @ file://DIR, python -m pip's too, and -r FILE,
//     whose lines may name any, as curl -K's file may; npm install
//     DIR, file:DIR, NAME@file:DIR; pnpm add and yarn add, pnpm install
//     and pnpm and yarn link, of DIR, file:DIR, link:DIR, yarn's
//     portal:DIR, whose code every later test requires), and
//     uv working on a project outside them (uv --directory DIR,
//     --project DIR, or UV_WORKING_DIR=DIR or UV_PROJECT=DIR before it:
//     uv --project /srv/other sync syncs and builds
//     it, uv --directory /srv/other run pytest runs its code; or
//     without one the directory a cd before it may have led to, whose
//     pyproject.toml and uv.toml uv reads for every command but uv
//     tool, self and help: cd /srv/other && uv run pytest, uv sync, uv
//     build, uv pip install; uvx and uv tool run with --directory DIR,
//     or building --from's path: cd /srv/other && uvx --from . tool; or
//     building a package from a path outside them, whose build backend
//     and build scripts it runs and whose code the environment then
//     imports, as cargo add --path's: uv pip install DIR or -e DIR, uv
//     tool install DIR (-e, --from, --with, --with-editable), uv add
//     DIR, uv run and uvx with --with DIR or --with-editable DIR, and
//     NAME @ file://DIR, and a requirements file outside them (-r FILE,
//     --with-requirements FILE), as pip's, or that uv pip sync or uv pip
//     compile reads (uv pip sync /srv/other/requirements.txt installs
//     what it names; uv pip compile /srv/other/pyproject.toml builds
//     the project's metadata, running its build backend, unless static);
//     a requirement by name or a requirements file inside is uv's);
//     RIPGREP_CONFIG_PATH=… rg; a shell a tool gives its own input or
//     arguments: tar --to-command=bash, rg --pre sh), without the
//     safety ask of a line that cannot be read.
//   - Rules are keyed by exact tool name; patterns on tools without a
//     pattern kind never match (as 2.x's default match_rule).
//   - The worker's rules (Options.Rules) and the session's rules apply
//     together; the session's mode replaces the default mode.
//   - A call whose ask could not be recorded (a KVStore's cluster
//     without a leader for 5 s, a full approvals bucket) is still
//     answered toolkit.CodeApprovalRequired, the decision that was made,
//     with its suggested rules, which a user can still add; but it is not
//     offered for approval (no MetaApprovalKey nor MetaInputDigest, as for
//     an id pending with another input), and its message says that its
//     request for approval could not be recorded and to send the same
//     call again later, which asks again. Offering it would send a user
//     to approve a call Guard.Approve cannot find. Not unavailable: the
//     permission check did decide, and an agent that treats unavailable
//     as "retry now" would retry into the same full bucket.
//   - A store failure fails closed: the call ends with
//     toolkit.CodeUnavailable and nothing runs. A KVStore's cluster
//     without a leader for the moment (an election, nodes restarting) is
//     no failure: its reads and writes wait for one within the call's
//     context, and the whole check of a call within Options.CheckTimeout
//     (DefaultCheckTimeout, 30 s) when the call has no earlier deadline.
//     Past that bound the call ends toolkit.CodeUnavailable with a
//     PermissionStateError saying the permission state is unreachable,
//     not run: an outage does not hold calls and worker slots for as long
//     as it lasts. The bound is the check's only, never the tool's. An
//     approval's use sent to a cluster without a quorum can still be
//     stored once it has one again, after its call was answered: sent
//     again, the call then asks for approval again (it never runs
//     twice, nor without an approval).
//   - A session whose KV key would be longer than wire.MaxSessionKeyLen
//     (as for the groups and the pins) cannot have a policy in a KVStore:
//     its calls end toolkit.CodeInvalidInput (BadRequestError), and its
//     key never goes into a subject the server would close the
//     connection over.
//   - Approvals and pending calls expire after Options.ApprovalTTL
//     (default 24h; the KV approvals bucket has the same max age, set by
//     the worker that creates it: toolctl only binds the buckets
//     (KVConfig.BindOnly), a store asked
//     for another TTL than its existing bucket's is an error, and a Guard
//     without one uses the bucket's). Their age is judged on one clock,
//     never the Created its writer stamped with its own clock against
//     the reader's (machines' clocks may be minutes or hours apart: an
//     approval given on a machine behind expired early, a call asked on
//     one behind looked expired to an operator ahead, and Approve said
//     ErrNoPending). A MemoryStore's are aged on the Guard's clock
//     (Options.Now; one process, one clock). A KVStore's are aged on the
//     server's: when the bucket's max age is no longer than the Guard's
//     ApprovalTTL (the default: the same), the bucket removes them on
//     the server's clock and a record it still holds is in time, with no
//     request of its own; with a shorter ApprovalTTL, a record's age is
//     the server's time now (the approvals stream's information, asked
//     once when a record is judged: an approval found, a listing, an
//     approval given, an id pending with another input) less the
//     server's stamp of its message (Pending.Stored, Approval.Stored). So
//     a pending call asked again, or restored after an approval that
//     could not be stored, counts from then. Created is for people to
//     read. The bucket holds at most
//     DefaultApprovalsMaxBytes (256 MiB), of which pending calls fill at
//     most three quarters: past that a call is still answered
//     approval_required but is not recorded as pending (nor offered for
//     approval) until entries expire, and approvals still fit. A MemoryStore keeps at most
//     MaxMemoryPending (10,000) pending calls, forgetting the oldest
//     first (approving one forgotten fails with ErrNoPending: the call is
//     sent again and asks again), and as many approvals not yet used, the
//     oldest forgotten first (its call, sent again, asks again). A
//     command line gets at most 16
//     suggested rules (more: only a one-shot approval is offered).
//   - A tool is hidden from listings only when no call of it can ever run
//     for the session: a name-level deny rule, or ModeExplore and a tool
//     that is never read-only (and has no ask rule that could lead to an
//     approval).
package permission
