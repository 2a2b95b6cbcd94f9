// Command worker serves tools on NATS: it is what operators run.
//
//	go run ./cmd/worker                                  # embedded NATS + JetStream on 127.0.0.1:4222
//	worker --config worker.yaml                          # groups, tools, middleware from a file
//	worker --nats nats://a:4222,nats://b:4222 --kv-replicas 3   # join an existing cluster
//	worker --check-config --config worker.yaml           # validate and exit
//
// With no --nats (and no nats.urls in the config, and no NATS_URL) the
// worker starts an embedded NATS server with JetStream on 127.0.0.1:4222,
// keeping its data under config.DataDir()/jetstream; other workers and
// clients join it at that address. With --nats it connects to the given
// servers and starts none. It then binds the group-state KV bucket
// (bus.KVState: every worker of the fleet sees the same activation per
// session), registers the configured groups and built-in tools, starts the
// mounts (see mount.go), installs the middleware, serves the toolkit
// (bus.Serve) and announces its tools (a discovery.Announcer), and logs
// one line:
//
//	level=INFO msg="toolbus worker ready" instance=host-4711 nats=nats://127.0.0.1:4222 embedded=true queue=toolbus tools=echo,sleep,... groups=none try="go run ./cmd/toolctl call echo '{\"text\":\"hi\"}'"
//
// # Flags and configuration
//
// Flags override the config file: --nats (env NATS_URL), --listen,
// --store-dir, --server-config, --insecure, --instance, --queue,
// --log-format, --log-level, --grace, --workspace, --shared-workspace,
// --group-state, and the connection flags --creds, --nkey, --user,
// --password, --token, --tls-ca, --tls-cert, --tls-key (envs NATS_CREDS,
// NATS_NKEY, NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_CA, NATS_CERT,
// NATS_KEY). A flag beats its environment variable, which beats the file,
// setting by setting: --nats or NATS_URL replaces the file's urls only,
// its TLS settings still apply. A connection that fails with settings of
// both the file and flags or variables says which were combined and where
// each came from (config.Combined, as toolctl says it), in the error
// that ends the connect retries and in each retry line's settings, and
// one refused for TLS the server does not offer is not retried, nor one
// whose server certificate is not verified (with several servers, while
// none of the others answers: see Decisions); with no CA set (a server that
// requires TLS gets it without any TLS setting) that error says the
// system's roots were used, and where the URL came from; with several
// server URLs it names each server's failure and what it says of that
// server (config.Dial). The TLS
// settings are for the servers the worker joins: the embedded server
// gets TLS only from a tls block in its --server-config, and the worker
// refuses to start (and --check-config fails), naming each TLS setting
// and where it came from, when TLS is set and no URL is, and its
// embedded server would offer none.
// --kv-replicas sets the replicas of the KV buckets and streams this
// worker creates (the permission buckets' and the durable path's unless
// permissions.kv_replicas or durable.replicas is set); 1 by default, 3 on
// a 3-node cluster. toolctl mcp serve, mcp stdio and mcp login take the
// same flag, with the same default, for the buckets they create when no
// worker has yet (group state, MCP grants): give them the same value.
// --http serves metrics and health; it listens before the worker
// connects to NATS (an address in use stops the worker with nothing
// taken), /healthz answers
// "ok" at once and /readyz 503 with what the start is at ("not ready:
// connecting to NATS at URL", "not ready: starting") until the worker
// serves, and /metrics serves what exists by then (the Go and process
// collectors, toolbus_nats_connected 0). --probe checks one and exits,
// --check-config validates and exits, and --version prints the version
// and exits.
//
// The configuration is validated as a whole before anything starts; every
// problem is printed with its source ("worker.yaml:12: ..." or
// "flag --nats: ...") and the worker exits with code 2. --check-config does
// only that and needs no NATS server; it also warns of what the worker
// would start without (a bad SKILL.md, a stdio MCP server's command that
// is not there).
//
// # Stopping
//
// On SIGTERM, SIGINT or SIGHUP the worker announces its goodbye (it leaves
// `toolctl tools` at once), stops taking calls, lets the running ones
// finish for the grace period (--grace, default 30s), then interrupts the
// rest; every caller gets a final response. It exits 0. A second signal
// cuts the grace period short (the calls are still interrupted and
// answered). The worker reloads nothing: SIGHUP (a closed terminal, or
// an operator expecting a reload) is a stop like the others; restart it
// to apply a changed configuration. The MCP gateway (toolctl mcp serve)
// stops the same way, with the same --grace. A worker running the
// embedded server stops it too once its own calls are done, whatever runs
// through it on other workers; it warns when other connections are still
// there (other_connections).
//
// # Exit codes
//
// 0 after a stop by signal (also one during the start), 1 when the worker
// could not start (the reason is logged) or its NATS connection closed
// for good (see Decisions), 2 for bad flags or an invalid
// configuration, and for what a flag must change, said on one line: an
// embedded server that would listen beyond loopback without
// authentication (--insecure insists), or no credentials for a server
// that wants them.
//
// # Decisions
//
//   - Logs go to stderr; stdout is only used by --check-config. When the
//     log's reader goes away (a broken pipe) the lines are lost and the
//     worker serves on.
//   - Joining a cluster, the worker retries connecting and binding the KV
//     bucket for up to two minutes (a cluster that is starting, as under
//     docker compose), then exits 1; while no server listens at the URL,
//     each retry line says so, where the URL came from, and that without
//     one the worker starts an embedded server. Wrong credentials or certificates,
//     or credentials too long for the server's max_control_line (exit 2,
//     naming it), are not retried when every server of the list says so;
//     while another server does not answer yet (a fleet starting beside
//     one misconfigured server), each such refusal is logged as an error
//     ("NATS server refused the worker"), naming the server, and the
//     worker waits for the others. Nor is a key of another role than the worker's (checked
//     first: it may take the fleet's cancels and answer into any inbox;
//     its calls may be confined to some tools or its queue group) or a JetStream
//     request the server refuses. Once connected it reconnects forever,
//     and logs it. A connection the server closes with an error nats.go
//     does not reconnect from (nats.CLOSED) is logged and ends the
//     worker with exit code 1, its calls interrupted: it could serve
//     nothing more, and a supervisor starts it again.
//   - A second worker started with no flags on the same machine is told
//     that 127.0.0.1:4222 is taken and to give both --listen and
//     --store-dir (a second server needs an address and a store of its
//     own), or --nats to join the running one.
//   - The worker's own connection to its embedded server is in-process.
//   - The embedded server holds its store directory locked (toolbus.lock
//     in it): a second worker given the store of a running one exits 1
//     saying it is in use. The lock goes with the process, so a worker
//     killed with SIGKILL leaves none: its replacement starts on the store.
//   - --kv-replicas above 1 needs --nats: the embedded server is one node.
//     An existing bucket is used as it is.
//   - The middleware, outermost first: logging (one line per call), the
//     mounts' middleware, the rate limits in config order, the timeouts.
//     A rate limit with a tool list applies to those tools only; key
//     "global" is one bucket for every call it applies to.
//   - A session's group state in KV expires state.session_ttl (7 days by
//     default) after its last change. Each bucket of sessions' state
//     (groups, pins, permission policies) holds at most
//     state.max_sessions sessions (4 million by default, set when a
//     worker makes it; a count, since a bound in bytes is reserved from
//     the server's JetStream store); past it a new session's reset_tools
//     fails saying so, its session-bound calls run unpinned and its mode
//     or rules cannot be set, until entries expire.
//   - A worker stopped while its NATS server is unreachable has nothing
//     to drain: it logs "not connected to NATS: stopped without
//     draining", lets its running calls finish within the grace period
//     (their finals are lost unless the connection is back before the
//     worker exits: their callers end them worker_lost), and exits; with
//     none running, at once. It logs "grace period over" when the grace
//     ended with a call running or taken and not yet run, which it
//     answered interrupted.
package main
