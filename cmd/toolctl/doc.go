// Command toolctl is how a person or a script talks to a toolbus fleet.
//
//	toolctl tools                                  # the fleet's tools: name, group, read-only, workers, description
//	toolctl call echo '{"text":"hi"}'              # prints hi
//	toolctl call sleep '{"seconds":30}'            # progress on stderr; Ctrl-C ends it interrupted
//	toolctl call view_text_file @input.json        # the input from a file, or - for stdin
//	toolctl groups set --session s1 exec           # activate exactly these groups for s1
//	toolctl groups --session s1                    # which groups s1 has active
//	toolctl cancel 8iNn9jibbSJWPYNE6USrgH          # cancel a call by id (see call --id, -v)
//	toolctl skills --session s1                    # the <agent-skills> prompt s1 sees
//	toolctl approve c1                             # let the approval_required call c1 run once
//	toolctl deny c1 --reason 'not on prod'         # or refuse it: sent again, it ends denied
//	toolctl allow --session s1 'execute_shell_command:git status:*'
//	toolctl mode --session s1 accept_edits         # the session's permission mode
//
// It connects to nats://127.0.0.1:4222, where `go run ./cmd/worker`
// listens, unless told otherwise with the worker's own connection flags
// and environment variables (--nats/NATS_URL, --creds, --nkey, --user,
// --password, --token, --tls-ca, --tls-cert, --tls-key), which may come
// before or after the command, or with --config and a worker's config file
// (its nats: section, or the address of its embedded server: its
// embedded.listen, else the listen of its embedded.server_config, as the
// worker reads them). A flag beats its variable, which beats the file,
// setting by setting: --nats or NATS_URL replaces the file's urls only,
// its TLS settings still apply (an auth flag or variable replaces the
// file's whole authentication). A connection that fails with settings of
// both the file and flags or variables says which were combined, and
// where each came from; one refused because TLS is set and the server
// offers none names each TLS setting and where it came from; one whose
// server certificate the system's roots do not verify, with no CA set
// (a server that requires TLS gets it without any TLS setting), says so
// and where the URL came from. One where no server listens at a URL
// given (by flag, variable or --config file) says so, where the URL came
// from and what to do. With several server URLs the error names each
// server's failure, and says these of the server they concern.
//
// # call
//
// `toolctl call NAME [JSON|@file|-]` sends one call. The input is a JSON
// object, inline, in a file (@file) or on stdin (-); none means {}. Chunks
// are written to stdout as they arrive, progress to stderr; a call that
// finishes before streaming anything prints its final content. Streamed
// text runs on from chunk to chunk; data blocks, the bus's "[toolbus]"
// notes and each block of an unstreamed final start on a line of their own. A call that
// does not succeed prints "toolctl: call ID ended STATE (code CODE)" on
// stderr, followed for a tool no worker serves by the fleet's tool of the
// nearest name, and for an input the tool's schema refuses by the tool's
// parameters (names, types, which are required). The output is the tool's: on a terminal its unprintable
// characters but line breaks and tabs, and its bytes that are not UTF-8,
// are printed Go-escaped (\x1b, \r, \u202e, \x9b; a character whose
// bytes come in two chunks is escaped whole), so that a tool cannot drive
// the terminal; to a file or a pipe,
// and as JSON with --json, it is exact. Flags: --session, --timeout (the call ends with code timeout),
// --id, --json (every event as a JSON line: {"chunk":…}, {"progress":…},
// {"log":…}, {"final":…}), -v (the call id first, the final's metadata,
// such as the worker, last), --keep and --durable (the final is kept for
// `toolctl result ID`; --durable sends the call on the durable path) and
// --answer (answer the tool's requests for input from stdin, as toolctl
// does on a terminal).
//
// The first Ctrl-C (or SIGTERM, or SIGHUP when its terminal closes, unless
// started under nohup) publishes a cancel and waits for the worker's
// interrupted final, which keeps the partial output; a second one quits
// at once (exit 130).
//
// # Exit codes
//
//	0  success
//	1  the call ended in error (tool_error, not_found, invalid_input, timeout, …), or the command failed
//	   (mcp serve and mcp stdio: also when their NATS connection closed for good)
//	2  bad usage or input: nothing was sent; or the NATS server refused the
//	   credentials a subject (a caller's key without its --identity, an
//	   operator's command with a caller's key): toolctl says which key does what
//	3  the call was denied (denied, approval_required)
//	4  the call was interrupted
//	5  NATS could not be reached
//
// # tools and groups
//
// `tools` lists what the whole fleet serves, from the workers'
// announcements (discovery.Fleet), merged by name; WORKERS counts the instances
// serving a tool. With --session it lists only what that session can call
// now: the basic group and the session's active groups. `groups` lists the
// groups with their default state and, with --session, the session's
// state, read from the fleet's KV bucket. `groups set --session S g1 g2`
// calls reset_tools: the named groups become active and all others
// inactive (no names deactivates all); it prints the groups'
// instructions. Both take --json and --wait (how long to collect the
// workers' answers, default 250ms); with no worker answering they exit 1.
// On a fleet with no groups besides basic (always active) both say so on
// stderr and exit 0, and so does `state import`.
//
// # skills
//
// `skills` lists the skills the workers declare (name, group, directory,
// description; --json for JSON). With --session it prints the exact
// <agent-skills> prompt for that session's active groups, as the model is
// to see it; when the session sees no skill, stdout stays empty and
// stderr says why (the fleet has no skills, or its skills are in groups
// the session has not activated). The bodies stay on the
// workers: the model reads one with the Skill tool. On a fleet with no
// skill, `skills` says so on stderr (skills come from the workers' skills
// directories) and exits 0, as `groups` does for groups. `instructions`
// prints a session's system prompt (its active groups' instructions, then
// its <agent-skills> prompt); when there is none it says so on stderr,
// stdout staying empty for scripts, and exits 0.
//
// # What the fleet says, on the terminal
//
// Names, descriptions, instructions, prompts and error texts come from
// the workers and the MCP servers they mount, which may put anything in
// them. The tables print a name that is not printable Go-quoted and a
// description's unprintable characters as spaces; the texts of several
// lines (instructions, the <agent-skills> prompt, groups set's answer)
// keep their line breaks and tabs and print every other unprintable
// character (terminal controls, bidi overrides) and byte that is not
// UTF-8 Go-escaped, such as \x1b, \u202e or \x9b. --json prints them exact, as JSON strings with
// every unprintable character \u-escaped.
//
// # pending, approve, deny, allow and mode
//
// They work on the fleet's permission store, the toolbus_permissions and
// toolbus_approvals KV buckets that workers with a permissions section
// share. A call that ends approval_required prints how to go on.
// `pending` lists the calls waiting for approval, the longest waiting
// first (--session for one session's, --limit, --json), with their inputs
// escaped for the terminal, to read before approving. A call that its
// session's policy surely lets run since it asked (`allow` added the rules
// its ask suggested, or one for every call of its tool; the session was
// set to bypass) waits for nobody and is not listed: sent again, it runs
// (permission.Guard.ListPending says what surely means). It can still be
// approved.
// `approve CALL-ID` (--session when the id waits in several sessions,
// --by for the logs) turns the pending call into a one-shot approval bound
// to its tool and input digest: the same call re-sent with the same id and
// input runs once, on any worker; another input is denied. `deny CALL-ID`
// (the same flags, and --reason TEXT) refuses it instead, as a user of
// AgentScope's permission flow rejects a call: it is no longer pending
// (`pending` does not list it), and the same call re-sent with the same
// id and input ends denied (code denied, permission_reason "user
// denied") with the reason for the model, every time until the approval
// TTL passes, rather than asking again; another input under the id, or
// another id, asks as before (a rule that allows the call, added later,
// still lets it run). Both print the call's session, or "without a
// session" for a call sent without one. `allow --session
// S RULE...` adds allow rules (TOOL or TOOL:PATTERN) to a session. `mode
// --session S [MODE]` shows, or sets, the session's mode and lists its
// rules. `tools --session S` hides the tools the session can never run
// (denied by a rule, or not read-only in explore mode), from the session's
// stored mode and rules and the default mode and rules each worker
// announces: a tool stays while one worker serving it could run it.
//
// # mcp-headers
//
// `mcp-headers SERVER [NAME=VALUE...]` replaces the headers the workers send
// to their HTTP MCP server SERVER from the next request on, without a new
// MCP session (the worker control subject
// tools.control.<instance>.mcp_headers); no headers restore the configured
// ones. It goes to every live worker that has the server, or to --instance.
//
// # Adding a command
//
// Each command is a file that registers itself from init with
// register(&command{...}); main.go needs no edit.
package main
