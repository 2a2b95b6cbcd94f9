// Package builtin provides the tools a toolbus worker ships with: echo and
// sleep for smoke tests and benchmarks, the text file tools confined to a
// workspace directory, and shell and Python execution in a group that is
// off until a session turns it on.
//
//	tk := toolkit.New(nil)
//	err := builtin.Register(tk, builtin.Config{
//		Workspace: "/srv/toolbus/workspace",
//		Tools: []builtin.Tool{
//			{Name: builtin.Echo},
//			{Name: builtin.ViewTextFile},
//			{Name: builtin.ExecuteShellCommand}, // in group "exec", inactive by default
//		},
//	})
//	if err != nil {
//		log.Fatal(err) // unknown tool, missing group, bad workspace: nothing was added
//	}
//	resp := tk.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "hi"}})
//	fmt.Println(resp.Text()) // hi
//
// # The tools
//
//   - echo {text}: returns the text. Read-only.
//   - sleep {seconds}: sleeps, reporting progress every second, and stops
//     at once when cancelled. Read-only.
//   - view_text_file {file_path, ranges?}: the file with line numbers
//     ("12: text"), all of it or the lines [start, end]; negative numbers
//     count from the end ([-100, -1] is the last 100 lines, or all of a
//     shorter file): a start before the first line and an end past the
//     last are clamped. Of an empty file, whatever the ranges, it says
//     the file is empty. Read-only.
//   - write_text_file {file_path, content, ranges?}: creates the file (and
//     its parent directories), overwrites it, or with ranges replaces those
//     lines by the content and shows the result around the change.
//   - insert_text_file {file_path, content, line_number}: inserts the
//     content and a line break before the line; the number of lines plus
//     one appends a line break and then the content. As in AgentScope,
//     content that ends with "\n" thus leaves an empty line after it, an
//     append to a file whose last line ends with its break leaves one
//     before it, and an insert into an empty file starts it with one; a
//     line number of 0 or less is refused before the file is looked at.
//   - execute_shell_command {command, timeout?} and execute_python_code
//     {code, timeout?}: run `sh -c command` or `python3 -u file` in the
//     workspace directory; see below.
//
// The names and parameters are AgentScope's, so agents written for it
// call them unchanged.
//
// # Workspace confinement
//
// The file tools accept a path relative to the workspace or an absolute
// path inside it. A path is refused, with state denied and a message that
// says why, when ".." leads out of the workspace, when it is absolute and
// outside, or when a symbolic link on the way points outside (symlinks of
// the existing part of the path are resolved; links that stay inside are
// followed). The file operation itself then goes through an os.Root, so a
// link swapped in after the check cannot escape either. That root is
// opened once, at Register, and held: the workspace is the directory its
// path named then. A call that finds the path no longer naming it (the
// directory moved away, or swapped for a symbolic link or another
// directory) is refused with code unavailable rather than followed; one
// that was removed is made again (or the directory since made there is
// taken), unless a symbolic link is on the path; anything else put
// there (a named pipe, say) is refused as a replacement, at once, never
// opened as a file. A session's own
// directory (PerSessionWorkspace) is opened through that root, so a link
// put in its place cannot lead out of the workspace either; anything
// else there that is not a directory (a file, a named pipe) fails the
// session's calls with code unavailable, saying what is in the way. What paths cannot
// show is not caught: a hard link to an outside file, or a bind mount,
// placed in the workspace by someone else. Shell and Python
// are not confined: they run as the worker's user, with its environment,
// and only start in the workspace. That is why they are off by default
// and, when on, sit in a group a session must activate.
//
// # Per-session workspaces
//
// With Config.PerSessionWorkspace a session's directory is made by its
// first call that writes a file or runs a command (write_text_file, the
// shell, Python); a write refused for its path (outside the workspace,
// naming a directory, "." the session's own included, a name longer
// than the system takes: 255 bytes on Linux) makes none, nor
// does a command refused before it runs (empty, its timeout out of
// range, too long for the system to start). A call that only reads makes none: view_text_file, or insert_text_file, in a
// session without a directory answers that the file does not exist, so
// a caller reading under ever new session names costs the worker no
// disk.
//
// The workspace holds at most Config.MaxSessionWorkspaces session
// directories (100,000 by default, -1 for no limit), whoever made them: past it a session
// without one gets none, and its writes and commands end unavailable
// with an error naming the limit and how to raise it, while the
// sessions that have one go on. The directories are counted when a
// session first needs one, and again, when a new one is wanted, once a
// second at most: those an operator removes free their places within a
// second, and on a shared workspace those other workers made count from
// the next count on (so the fleet may go past the limit by what the
// other workers make within a second). No directory is removed by the worker: a session's files are its
// own, and only the operator knows when a session ended, so removing
// them (of sessions idle for long, say) is the operator's. Reaping
// idle directories was not chosen: a call of a session may start
// whenever, and its directory must not vanish under it.
//
// # Processes
//
// A command longer than the system takes as one argument (128 KiB on
// Linux) is refused as invalid input, with the advice to run it from a
// script file. A command runs in a session and process group of its
// own, with no input and no controlling terminal (one that prompts, for a password
// say, fails at once rather than reaching the worker's). Its stdout and
// stderr are streamed as text chunks, interleaved in the order they are
// written, a line at a time (a line without "\n" is sent once it has
// waited 200ms for one, or at 64 KiB). The final chunk is "<returncode>N</returncode>"
// (minus the signal's number when a signal ended the process, -9 for
// SIGKILL, as AgentScope shows Python's returncode) and the response's metadata holds
// "exit_code". A non-zero exit code is still a successful call: the
// command ran, and the model reads the code.
//
// Cancelling the call, or the call's own timeout passing, sends SIGKILL to
// the whole process group and, on Linux, to every other process of the
// command's session: the command and every process it started, also
// one moved to a group of its own (setpgid, a shell's job control); a
// process it started that left the session, with setsid, is beyond
// reach: its pipes are closed after two seconds. A timeout ends the
// call with code timeout, keeping the output so far, followed by
// AgentScope's "TimeoutError: The command execution exceeded the timeout
// of N seconds." ("The code execution" for Python) and
// "<returncode>-1</returncode>". When the command
// exits by itself, whatever it left running in its session is killed
// too, so no call leaves processes behind (nor zombies, where the
// worker is their parent of last resort: PID 1 of a container, or a
// subreaper; a process that left the session, or a group other than the
// command's, and ends later is reaped when the next command ends: there,
// each command's end waits for every ended child of the process in a
// session other than its own that is not a running command, so a program
// embedding these tools as PID 1 that starts children in sessions of
// their own and waits for them itself may find them gone). The group
// and the session are known by the number of the command's own
// process, which the system may give another once that process is
// reaped: on Linux it is reaped only after the last signal to them (a
// cancel or timeout while a process that left the session still holds
// the output included); elsewhere it is reaped first, and a kill after a
// PID wrap could reach another's group. Output beyond
// Config.MaxOutputBytes is dropped and the result says how many bytes
// were.
//
// # Other systems
//
// The package builds for Unix systems and for Windows. On
// Windows, Register refuses execute_shell_command and
// execute_python_code, and Config.SharedWorkspace, each with an error
// saying why: a cancelled command's every process cannot be found and
// killed there (no process groups or sessions), and the file tools take
// no file locks there to order the edits of different workers. The file
// tools work, with these differences: an edit does not carry a file's
// owner over, a killed edit's temporary file is not removed later (no
// lock tells it from a live edit's), and no open refuses a directory
// swapped for a named pipe.
//
// # Decisions where AgentScope is silent or differs
//
//   - The file tools answer with AgentScope's texts ("The content of f in
//     [3, 5] lines:", "Create and write f successfully.", "Overwrite f
//     successfully.", "Write f successfully. The new content snippet:",
//     "Insert content into f at line n successfully. The new content
//     between lines a-b is:"), with its context around an edit (5 lines
//     before, 5 after a write's content, 5 after an insert's line plus
//     the lines the file gained), but a
//     last line without "\n" is shown ending its line before the closing
//     fence, where AgentScope runs it into the fence; what ranges clamp,
//     and a write's ranges starting right after the last line (which
//     append), are answered as any other range. A write's ranges
//     starting further on are refused with AgentScope's "Error: The
//     start line s is invalid. The file only has n lines."
//   - ranges may be any list (the schema says array or null): one that
//     is not two integers gets AgentScope's answer, "Error: Invalid range
//     format. Expected a list of two integers, but got [1, 2, 3]." (from
//     view_text_file "InvalidArgumentError: Invalid range format. …"),
//     the list printed as Python prints it; a start after the end gets
//     "InvalidArgumentError: The start line is greater than the end line
//     in the given range [5, 3]." from both tools (AgentScope's
//     write_text_file has no such check and keeps the lines between
//     twice). An empty list views the whole file, and creating a file
//     ignores it silently, as in AgentScope. Unlike Python, true and
//     false are not line numbers, nor is 2.0 told from 2 (a JSON number
//     reaches the tool as a float64 either way).
//   - write_text_file with ranges ends a content that lacks a line break
//     with the file's break when lines follow it, where AgentScope writes
//     the content as given and so joins its last line to the next ("X"
//     over line 2 of "a\nb\nc\n" makes "a\nXc\n" there, "a\nX\nc\n"
//     here); an empty content removes the lines, as there.
//   - view_text_file of an empty file answers "The file f is empty.",
//     whatever the ranges, where AgentScope shows an empty code block
//     ("The content of f:\n```\n```") or, for ranges, says they are out
//     of bounds of a file "which has only 0 lines".
//   - A file_path is not expanded as AgentScope's os.path.expanduser
//     does: "~/notes.txt" names a directory "~" of the workspace, not
//     the worker's home, which is no place of the workspace.
//   - Output is streamed and interleaved like a terminal, instead of being
//     returned at the end as separate <stdout> and <stderr> blocks.
//   - File tool failures are errors (state error, or denied for paths
//     outside the workspace), not successful results holding an error text.
//   - write_text_file creates missing parent directories.
//   - write_text_file and insert_text_file replace a file: the new
//     content goes to a temporary file in the same directory
//     (".toolbus-*.tmp"), is synced, takes the file's mode, its extended
//     attributes (POSIX ACLs among them; the security namespace is the
//     system's to label) and no others (not the ACL a directory's
//     default ACL gives a file made in it), on Linux the inode flags
//     a file's owner may set (chattr d, A, S, c, C, m, s, u) and no
//     others of them (not those its directory passes to a file made
//     in it), and its owner and group,
//     each where the worker may give it (a copy that is not its owner's drops the set-user-ID
//     and set-group-ID bits, one not of its group set-group-ID, as the
//     kernel does when another user writes it), and is renamed over the
//     file. A file whose attributes or flags
//     cannot all be carried over (or are over 1 MiB) is rewritten in
//     place instead, as below. A reader sees the old file or the new
//     one, never part of one, and a failed write leaves the file as it
//     was. The directory is opened once for the edit: one renamed
//     meanwhile (mv by a command) has the new file under its new name,
//     as if the edit came first. A worker killed half-way leaves its
//     temporary file behind: a later edit in that directory removes it
//     once it has not
//     changed for 15 minutes and no edit holds it (an edit holds a lock
//     on its own temporary file, the same lock as below). Only regular
//     files named as the tools name theirs (".toolbus-", 26 letters
//     and digits of base32, ".tmp") are removed; each worker looks in a
//     directory once in 15 minutes at most. A path that is a symlink to a file of the workspace edits its
//     target; the link stays. A file's other hard links keep the old content. Where the
//     directory refuses the replacement (not writable by the worker, or
//     sticky and the file another user's, or on Linux append-only,
//     chattr +a, where a temporary file could not be removed) or the
//     file system has no modes, a file the worker may write is
//     rewritten in place, as before, without that guarantee (a new file
//     in an append-only directory is written where it is made): the
//     room for the new content is taken first (on Linux), so a full disk, a quota or a file size
//     limit fails the edit with the file untouched, and a failure after
//     the writing began says the file may hold part of the new content.
//     A failed edit's error says whether anything was written and, on
//     Linux, names the inode flag that refused it, which binds root too:
//     a file immutable or append-only (chattr +i, +a), or an immutable
//     directory for a new file.
//   - A worker makes its edits of one file one after another (through a
//     symlink too), so concurrent calls never drop each other's changes;
//     an edit waiting for its turn ends when its call's context does.
//     The workers of a shared workspace order theirs too: an edit holds
//     an exclusive lock on the file it changes (on Linux an open file
//     description lock, which NFS takes on the server; elsewhere a
//     flock), and another worker's edit reads the file once it is in
//     place. A file the worker may not open for writing, or on a file
//     system without such locks, is edited unordered. A file another
//     program keeps locked for 30 seconds fails the edit as
//     unavailable, nothing written. A change made meanwhile by a
//     command, or by a program that takes no such lock, is not ordered
//     with them and may be overwritten.
//   - A line ends after "\n", "\r\n" or a lone "\r", as in AgentScope,
//     which reads files with Python's universal newlines, and is shown
//     ending with "\n" whichever it is. AgentScope then writes every line
//     break of an edited file as "\n"; here an edit keeps the file's
//     bytes but for the lines it changes, and in a file whose first line
//     ends with "\r\n" (or "\r") writes that break, in the content too,
//     so the file keeps one kind of line break. A byte order mark at the
//     start of a file stays there, and is no line: a file of a mark alone
//     is empty.
//     write_text_file without ranges writes the content as it is given,
//     as AgentScope's open(path, "w") does on Linux and macOS: the old
//     file's mark and breaks go with it.
//   - A file that is not UTF-8 is shown with each invalid byte as U+FFFD
//     and edited keeping its bytes, where AgentScope's tools, which read
//     it as UTF-8, fail ("'utf-8' codec can't decode byte 0xe9 …").
//   - Files with NUL bytes are refused as binary; files above
//     Config.MaxFileBytes are refused as too large. An edit refuses,
//     writing nothing, content with a NUL byte or a file that would be
//     over the limit: the tools make no file they cannot read back.
//   - A file_path over 4096 bytes (Linux's PATH_MAX) is refused as
//     invalid input, without being quoted back.
//   - Python code is written to a temporary file outside the workspace and
//     removed after the run, as AgentScope does. The file has a temporary
//     directory of its own, which Python puts first on sys.path, so the
//     code imports nothing that others left in the shared one. It runs
//     with PYTHONUTF8=1 and PYTHONIOENCODING=utf-8, as AgentScope's does,
//     so its output and what open() reads and writes by default are UTF-8
//     whatever the worker's locale.
package builtin
