// Command bench is the toolbus load benchmark. It measures toolbus and its
// baselines in the same run, on the same server, with the same payloads,
// and reports the ratios, so a fleet can be sized and the bars of
// DESIGN.md §5 checked on any machine:
//
//	go run ./cmd/bench                                    # default suite, about a minute
//	go run ./cmd/bench -s all -c 1,16,64,256 -d 3s --json r.json --svg r.svg
//	go run ./cmd/bench -s echo --transport tcp --rate 20000  # open loop, 20k calls/s
//	go run ./cmd/bench --workers 3 -s sleep               # 3 worker processes on loopback
//	go run ./cmd/bench --nats nats://10.0.0.5:4222 --workers 2 -s echo,sleep
//
// The default suite is echo, stream, sleep with 1 and 3 workers and
// cancel, at 1, 16 and 64 callers, 1s per point after a 250ms warm-up.
//
// # Systems
//
//   - toolbus: the full call path: bus.Client → NATS → bus.Worker →
//     toolkit (lookup, validation, middleware) → tool, and the final back.
//   - raw: nats.go request/reply to a trivial queue-subscribed replier
//     doing the same work (for stream: the replier publishes the N
//     messages to the caller's reply subject, received on one wildcard
//     inbox as the bus client does).
//   - mcp-http: a go-sdk MCP client session calling the same echo tool on
//     a go-sdk Streamable HTTP server on loopback (echo only).
//
// # Scenarios
//
//	echo     tiny in, tiny out (--text bytes)
//	payload  --in bytes in, --out bytes out; above max_payload the result
//	         travels in several chunks (raw has no baseline then)
//	stream   --chunks chunks of --chunk-size bytes per call; chunks/s
//	sleep    IO-bound: each call sleeps --sleep in one of a worker's
//	         --slots; run with each fleet size of --sleep-workers
//	cpu      CPU-bound: --iters sha256 rounds per call
//	inflight --inflight sleep calls (--sleep, 2s or more) at once on
//	         worker processes; memory is read once every call has been
//	         seen started by its worker (the sleep tool reports progress
//	         when it holds its slot), and a call that ended before then is
//	         counted ended_before_measured. NATS spreads the calls at
//	         random: give each worker --slots for more than its share
//	cancel   a call of a tool that waits to be cancelled; latency is
//	         cancel → the caller's interrupted final, "extra" is
//	         cancel → the tool's ctx.Done; raw is the same with nothing
//	         but nats.go (its replier answers "started" after the
//	         worker's FlushDelay, 5ms, as the bus holds a first chunk,
//	         so both systems cancel at the same pace)
//	groups   reset_tools for a new session, then at once a call of a tool
//	         in the activated group (fleet of at least 2; state in
//	         JetStream KV). NATS picks the worker: "cross" counts the
//	         calls that landed on another worker than their reset_tools,
//	         and "extra" is the latency of those calls alone
//
// # Topologies
//
// By default everything runs in one process on an embedded server,
// in-process (--transport inproc) or over loopback TCP (--transport tcp);
// each worker has its own connection. --workers N starts N worker
// processes (this binary re-executed as "bench worker --nats URL") and
// reports their CPU and RSS (on Linux they run in a process group of
// their own, so a Ctrl-C reaches the bench, which stops them, and they
// die with the bench however it ends); --nats URL uses an external server or
// cluster, with workers started there separately (or by --workers). A
// worker started separately is this binary in worker mode, which serves
// the bench tools, the raw repliers and, with --mcp-listen, the MCP echo
// server, and prints "ready [mcp-url]" once subscribed:
//
//	bench worker --nats nats://10.0.0.5:4222 [--slots 8] [--mcp-listen 127.0.0.1:0]
//	bench --nats nats://10.0.0.5:4222 --mcp http://127.0.0.1:PORT
//
// Without --mcp (and without --workers) the mcp-http baseline is left out
// with a note.
//
// A worker process that ends while the run uses it, other than by the
// bench (crashed, OOM-killed, killed by someone), ends the run with exit
// status 1 and an error naming it: its pid, how it ended (exit status or
// signal) and its last lines on stderr. The scenario it was lost in is
// left out of the tables and of --json, which hold the scenarios finished
// before: its points were measured on a fleet other than the one
// reported. Under --fault the bench kills workers itself; a worker that
// ends otherwise is a loss there too.
//
// # Reading the table
//
// One table per scenario, a row per system and concurrency c (callers in
// flight): calls/s (successful calls over the measuring time), latency
// percentiles p50/p90/p99/p99.9 of successful calls, errors by code, cpu
// in cores used during the point and cpu/call, the CPU time per successful
// call (of the worker processes; with an asterisk, of the whole bench
// process, server and callers included; with a dagger, of the bench
// process's callers alone, the server and the workers being elsewhere:
// --nats with workers started separately), rss, and per
// baseline "0.85x (p50 1.20x)": throughput as a multiple of the
// baseline's (higher is better) and p50 latency as a multiple of the
// baseline's (lower is better). The summary checks the bars: echo p50 at
// c=1 ≤ 1.3x raw, echo calls/s at c=64 ≥ 0.8x raw and ≥ 3x mcp-http
// (on worker processes, --workers, also their CPU per call ≤ 2x raw's),
// stream chunks/s ≥ 0.8x raw publish, the sleep scale-out and the cancel
// latencies (ctx.Done p99 < 2ms at c=64, next to raw's); a bar whose
// baseline made calls of which none ended well is said not checked,
// with the baseline's errors. Machines are
// noisy: compare the ratios of one run, not absolute numbers across
// runs. The systems compared at one point take
// turns: the point's measuring time is cut into --rounds rounds (4)
// measured A B, B A, A B, B A, and each row sums its rounds, so a slow
// stretch of the machine (another process, a busy host) falls on every
// system rather than on whichever ran then. --rounds 1 measures each
// system in one go, as a single run of the system alone would.
//
// # Correctness under load
//
// Every call is checked: exactly one final, with the call's id, state
// success and the expected content (the echoed text, the payload's bytes,
// the concatenated chunks, the digest); lost chunks, a missing or a
// duplicated final, a wrong id or content are errors in the report with
// their own codes (no_final, duplicate_final, wrong_id, bad_content,
// lost_chunks), next to the toolkit's codes. Raw replies and MCP results
// are checked the same way. The client stops listening after a call's
// first final, so a second one would never reach it: --audit adds a
// second connection that hears every frame sent to the caller's inboxes
// and reports wire_no_final, wire_duplicate_final and wire_seq_gap per
// call (it costs some throughput, so it is off by default; the tests run
// with it). A call the client reports failed (unavailable, worker_lost)
// is counted under that code, not again as wire_no_final. A call the
// client sent again after a lost attempt travels under each attempt's id
// (<id>-r<n>): each attempt is checked on its own, and the call has its
// final when one attempt has. The fault scenario's calls are audited too;
// its summary counts as lost the calls that ended without a good final,
// and lists the auditor's findings apart ("wire audit: ..."): they are
// about frames, and the call they were found on may have ended well.
//
// # Decisions
//
//   - Closed loop by default: each caller calls again as soon as its call
//     ends. --rate R is open loop: calls are scheduled at R/s in total,
//     at most c in flight, and latency counts from the scheduled time, so
//     a system that falls behind shows its queue instead of hiding it.
//     Every system is then offered the same rate, so the summary does not
//     judge the throughput bars (both at the rate read 1.00x), only the
//     latency and CPU ones. A point has one schedule, from which each
//     round takes the calls of its stretch of the point's time (round r
//     of --rounds 4 the calls due in the r-th quarter of -d), so the
//     point sends the calls of its rate, up to one call more (at t=0)
//     for a rate × -d that is not whole; a round does not start a
//     schedule of its own with a call, which sent up to twice the rate
//     at 1-2 calls a round. A rate that fits less than one call in a
//     round (-d / --rounds) is refused: some rounds would send none.
//   - Calls in flight when a point's time is up are finished and counted.
//   - The sleep tool waits for one of its worker's --slots before
//     sleeping, like a worker with a fixed pool of some scarce resource;
//     without such a limit one worker would absorb any concurrency and
//     there would be no scale-out to see.
//   - Workers run with MaxInFlight 4096 so the bench measures the call
//     path, not the overload answer.
//   - The MCP server uses the go-sdk defaults (stateful, SSE responses);
//     the client shares one session among all callers, with keep-alive
//     connections, as the bus client shares one connection.
//   - The stream default (100 × 512 bytes) is above the worker's 32 KiB
//     hold limit, so the chunks travel as chunk frames; smaller streams
//     that end within the flush delay are folded into one final, and
//     count the same chunks.
//   - --max-payload is 4096 at least (a flag error below): a worker's
//     announcement of the bench tools, with their schemas, and the
//     JetStream requests that create its buckets and streams must each
//     fit in one message, and below that the run could not start.
//   - --cpuprofile profiles the bench process; with in-process workers
//     that covers client, server and worker.
package main
