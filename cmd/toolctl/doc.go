// Command toolctl is how a person or a script talks to a toolbus fleet.
//
//	toolctl tools                                  # the fleet's tools: name, group, read-only, workers, description
//	toolctl call echo '{"text":"hi"}'              # prints hi
//	toolctl call sleep '{"seconds":30}'            # progress on stderr; Ctrl-C ends it interrupted
//	toolctl call view_text_file @input.json        # the input from a file, or - for stdin
//	toolctl groups set --session s1 exec           # activate exactly these groups for s1
//	toolctl groups --session s1                    # which groups s1 has active
//	toolctl cancel 8iNn9jibbSJWPYNE6USrgH          # cancel a call by id (see call --id, -v)
//
// It connects to nats://127.0.0.1:4222, where `go run ./cmd/worker`
// listens, unless told otherwise with the worker's own connection flags
// and environment variables (--nats/NATS_URL, --creds, --nkey, --user,
// --password, --token, --tls-ca, --tls-cert, --tls-key), which may come
// before or after the command, or with --config and a worker's config file
// (its nats: section, or the address of its embedded server).
//
// # call
//
// `toolctl call NAME [JSON|@file|-]` sends one call. The input is a JSON
// object, inline, in a file (@file) or on stdin (-); none means {}. Chunks
// are written to stdout as they arrive, progress to stderr; a call that
// finishes before streaming anything prints its final content. A call that
// does not succeed prints "toolctl: call ID ended STATE (code CODE)" on
// stderr. Flags: --session, --timeout (the call ends with code timeout),
// --id, --json (every event as a JSON line: {"chunk":…}, {"progress":…},
// {"final":…}) and -v (the call id first, the final's metadata, such as
// the worker, last).
//
// The first Ctrl-C (or SIGTERM) publishes a cancel and waits for the
// worker's interrupted final, which keeps the partial output; a second one
// quits at once (exit 130).
//
// # Exit codes
//
//	0  success
//	1  the call ended in error (tool_error, not_found, invalid_input, timeout, …), or the command failed
//	2  bad usage or input: nothing was sent
//	3  the call was denied (denied, approval_required)
//	4  the call was interrupted
//	5  NATS could not be reached
//
// # tools and groups
//
// `tools` lists what the whole fleet serves, from the workers'
// announcements (bus.Fleet), merged by name; WORKERS counts the instances
// serving a tool. With --session it lists only what that session can call
// now: the basic group and the session's active groups. `groups` lists the
// groups with their default state and, with --session, the session's
// state, read from the fleet's KV bucket. `groups set --session S g1 g2`
// calls reset_tools: the named groups become active and all others
// inactive (no names deactivates all); it prints the groups'
// instructions. Both take --json and --wait (how long to collect the
// workers' answers, default 250ms); with no worker answering they exit 1.
//
// # Adding a command
//
// Each command is a file that registers itself from init with
// register(&command{...}); main.go needs no edit.
package main
