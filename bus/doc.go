// Package bus puts a toolkit.Toolkit on NATS: a Worker serves it, and a
// Client calls it from anywhere with the local Toolkit's surface
// (toolkit.Caller: Call, Invoke, SessionSchemas). The bus is transport
// only: no tool semantics live here. subjects.md, at the repository root,
// is the wire contract; package wire holds its constants, messages and
// codec; package embedded runs a NATS server in process when there is
// none; package discovery announces workers and merges the fleet's view.
//
//	srv, err := embedded.Start(nil) // in-process only, JetStream in a temp dir
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer srv.Shutdown()
//
//	tk := toolkit.New(nil)
//	_ = tk.Add(toolkit.Func("echo", "Echo the text back.",
//		func(ctx context.Context, in struct{ Text string `json:"text"` }) (string, error) { return in.Text, nil }))
//
//	wnc, _ := srv.Connect()
//	defer wnc.Close() // the connections stay yours: Stop and Close leave them open
//	w, err := bus.Serve(wnc, tk, nil) // queue-subscribes tools.call.echo
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer w.Stop(context.Background())
//
//	cnc, _ := srv.Connect()
//	defer cnc.Close()
//	c, _ := bus.NewClient(cnc, nil)
//	defer c.Close()
//	for ev := range c.Call(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}}) {
//		if ev.Final != nil {
//			fmt.Println(ev.Final.State, ev.Final.Text()) // success hi
//		}
//	}
//
// # What travels
//
// A call is a request on tools.call.<tool> with a reply subject; the worker
// answers with frames (chunk, progress, heartbeat, final), each numbered,
// exactly one final, all published under one per-call lock on one
// connection, so they arrive in order. Chunks go out in bursts (at most 6ms
// or 32KiB apart); a call that ends before its first burst sends one
// message: the final with the whole result. Chunks larger than the
// server's max_payload are split, never cut. Cancels are broadcast on
// tools.cancel.<call-id>, with the header Toolbus-Version: 1; deadlines travel in a header and are enforced by
// the worker; a silent worker is detected by heartbeats, and a caller gone
// without cancelling by the worker's probes of its inbox (a heartbeat with
// a reply subject; WorkerOptions.CallerGoneAfter).
//
// # Decisions
//
//   - Overload: a worker at MaxInFlight answers overloaded with
//     retry_after_ms, after waiting at most 10ms for a running call to
//     end, rather than pausing its subscriptions; NATS picks
//     queue members at random, and a paused fleet would look unavailable.
//   - Deadlines travel as a relative timeout (Toolbus-Timeout, ms) so
//     worker and caller clocks need not agree.
//   - The caller's cancel says why (empty body or "deadline"), so a call
//     whose deadline the caller noticed first still ends with timeout.
//   - The call id is required on the wire (cancels are addressed by it);
//     the Client fills in a unique one when ToolCall.ID is empty.
//   - A fast call travels as one message, the final with its chunks folded
//     in; the client yields that content as one chunk event before the
//     final, so consumers see chunks then the final on both transports. A
//     streaming call yields every chunk and then the final, rebuilt from
//     the chunks with toolkit.Accumulator. A final the client makes itself
//     after chunks arrived (worker_lost, unavailable at Close, a cancel
//     the worker did not answer in time) appends its message to the
//     result without a chunk event; its worker_lost carries none of the
//     chunks' metadata (the client knows only that the worker went
//     silent).
//   - The client sends a call again (ClientOptions.MaxAttempts) only
//     while none of its chunks reached the caller and its tool is
//     read-only or idempotent: after worker_lost, after overloaded, and
//     after an interrupt by its worker's stop past the grace period (a
//     rolling deploy), which the worker marks (wire.MetaDrained) so that
//     it is not taken for the caller's cancel. Another worker then runs
//     it from the start, and its progress reports are yielded only once
//     they pass the highest the caller saw (progress never goes back
//     over a call's attempts, nor over a durable call's deliveries); a
//     call whose output reached its caller, or of a tool that may
//     have effects, ends interrupted with toolkit.DrainedText. Only the
//     worker marks it: the worker drops wire.MetaDrained,
//     wire.MetaToolRan, wire.MetaSessionWorker and
//     wire.MetaSessionMovedFrom from the metadata a tool or its middleware
//     writes (in a chunk, a result or a *toolkit.Error), and the client reads
//     them from the final's own metadata alone, not from the chunks'. A
//     worker of an earlier build passes a tool's own keys on in its
//     final, which nothing on the wire tells from its verdict (replies
//     carry no version): upgrade the workers (subjects.md, Final
//     responses and metadata).
//   - worker_lost is the bus's verdict alone: a call a tool or its
//     middleware ends with toolkit.CodeWorkerLost (say, passing on
//     another call's answer) goes out tool_error, its message and
//     metadata kept, and is not sent again; a worker_lost final with
//     wire.MetaToolRan (a worker of an earlier build passing on its
//     tool's) is the call's answer too. overloaded is a tool's own
//     answer when the final carries wire.MetaToolRan (an upstream
//     refused it for load after it ran): sent again, after
//     retry_after_ms, only for a read-only or idempotent tool, as the
//     Retry middleware does in process, and a Cancel meanwhile leaves it
//     the call's answer for any other tool; without the key the call was
//     refused before its tool ran (the worker's MaxInFlight, a
//     rate-limiting middleware).
//   - Listing is fleet-wide: Serve announces its toolkit (a
//     discovery.Announcer) unless WorkerOptions.AnnounceInterval is
//     negative, and Client.SessionSchemas merges every worker's
//     announcement through a discovery.Fleet the client starts on first
//     use, reading the session's groups from the groups KV bucket
//     (defaults apply while it does not exist) and narrowing the list with
//     ClientOptions.Filter. Client.List (tools.list) stays one worker's
//     view.
//   - An unknown tool has no subscribers, so NATS answers "no responders";
//     the client then asks tools.list and reports not_found when workers are
//     up but none has the tool, unavailable when nobody answers.
//   - reset_tools over the bus requires a session: state is per session
//     and shared by the fleet. So are its groups: a worker taking a
//     reset_tools that names a group it lacks judges the name against the
//     fleet's groups (toolkit.WithFleetGroups), through a
//     discovery.Fleet it starts on the first such call (one discover
//     window) and keeps until Stop, so that in a mixed fleet the call
//     succeeds whichever worker takes it, and bad names cost a read of
//     that view, never a request to the fleet per call. An active group a
//     worker does not serve leaves it with none of that group's tools.
//   - The client remembers, per session, the groups revision returned by
//     reset_tools and sends it with the session's later calls
//     (Toolbus-Groups-Revision), so whichever worker runs them reads at
//     least that state. It remembers the revisions (and pins) of at most
//     ClientOptions.MaxSessions sessions, the least recently used
//     forgotten first. A worker waits for a revision its bucket has not
//     reached at most RevisionWait (2 s), and not at all for one more than
//     RevisionLead (1024) past the bucket's last revision (never written by
//     it): the call ends unavailable, naming both revisions. A caller
//     cannot make a worker wait longer, whatever the call's deadline.
//   - List requests are answered per caller identity in order and the
//     callers in turn on up to 4 goroutines (lists.go), so one caller's
//     slow listing holds up its own and takes one of the 4, not the
//     others' queue.
//   - A tool that ignores its cancelled context is abandoned after
//     AbandonAfter (2s): the caller gets its final, the goroutine finishes
//     on its own.
//   - Split data blocks without an id get one (<call-id>-part-<n>) so their
//     pieces merge.
//   - No timer per call. A worker has one clock goroutine: it flushes held
//     chunks (a queue, since FlushDelay is the same for every call; flushes
//     due within 1ms go out together) and, while calls run, looks at each
//     every 5ms for heartbeats and abandons. A client has a watchdog that
//     runs while calls are pending and looks at them every StallTimeout/8.
//     Only a cancelled call arms a timer (CancelGrace), and a request with
//     a timeout gets the context deadline the tool sees.
//   - No goroutine wake per quick call. The call subscriptions deliver
//     into one channel, and one goroutine at a time (the leader) receives
//     from it. A quick tool's call (its last 16 runs each ended within
//     200µs) runs on the leader, which then receives the next: a stream
//     of quick calls is drained as a plain NATS replier drains its
//     subscription, and their finals leave in batches. Any other call
//     reaches its goroutine in one hop: the leader passes the receiving
//     on (to a waiting goroutine, or a new one) and runs the call itself.
//     A quick call that blocks is caught by the clock within 2ms plus a
//     tick, which passes the receiving on and marks the tool slow for its
//     next 1024 runs; with more than 256 calls waiting, quick calls run
//     on their own goroutines too, so CPU-bound ones spread over the
//     cores. A burst starts goroutines up to MaxInFlight plus a few
//     (those answer overloaded while MaxInFlight calls run); after it all
//     but a few end. The channel holds 32768 calls not yet taken; NATS
//     drops calls beyond (their callers see worker_lost), which only
//     happens to a worker starved of CPU or with its leader stuck. Such
//     drops are counted (WorkerCounters.Dropped, by kind of
//     subscription) and warned of, at most once a second for each kind:
//     the clock reads nats.Subscription.Dropped of every subscription
//     once a second, adding nothing to a call's path.
//   - MaxInFlight bounds the calls whose tool runs: a call waiting for a
//     goroutine or sending its final does not count.
//   - A durable call whose deliveries ran out is answered from
//     JetStream's max-deliveries advisory, which the exhausted stream
//     (ExhaustedStreamConfig) keeps until a worker has answered the call:
//     JetStream publishes it once, also while no worker is up (the fleet
//     restarting), and one heard on core NATS alone was lost then, the
//     call left in the calls stream without a final. No cost per call: it
//     is one consumer the fleet shares, bound in the background as a
//     worker starts (two JetStream requests, three for the worker that
//     creates the stream, and one standing pull), so the worker takes
//     calls meanwhile; an advisory waits in the stream for it. Any
//     caller can have the server store its answers in that stream (a
//     request's reply subject is not checked) and push real advisories
//     out: a worker that takes a message there that is no advisory looks
//     for the exhausted calls of its tools in the calls stream itself,
//     once a second while such messages come; a tool with calls in
//     progress then it looks at again each second until none is, and one
//     whose consumer or calls could not be read at waits doubling from a
//     second up to a minute until they are read, logging each change of
//     a tool's state once (sweepExhausted).
//   - A backlog of silent durable calls costs JetStream requests per
//     tool, not per call: a client's silent calls of one tool share their
//     looks at its consumer of the calls stream (one at a time, answering
//     them for half a stall timeout; a call whose caller cancels it or
//     whose deadline passes stops waiting for a slow look at once, the
//     one that asked it too, the look going on for the others), and a
//     call no worker was heard of
//     reads its kept final only when that look says the consumer
//     delivered it, or the consumer is younger than the call (made again
//     since) or cannot be read: a call still waiting in the queue has no
//     final kept.
//   - The cancels stream, which keeps durable calls' cancels for the
//     worker that takes a call later, is every caller's: full, it refuses
//     a new record rather than dropping its oldest (CancelsStreamConfig),
//     so no caller's records push out another's, and the client waits
//     for the stream's answer to a record (at most 2 s, once the cancel
//     went out) to tell its caller of a refusal (ErrCancelNotRecorded:
//     the call may run when a worker takes it from the queue). So it
//     does for the cancels it sends itself, of a durable call it ends
//     (stalled, untaken, over a bound): the call's final says so after
//     its message; Close's error says so, and a call its caller stopped
//     reading has it logged.
//   - msgpack bodies go through package wire's generated codec into
//     pooled buffers, byte for byte what the msgpack library writes;
//     strings of a received body share its memory. A value in a Go
//     caller's Input or a tool's metadata, log data or ask params that
//     is not a map[string]any, []any, string, number, bool or nil (a
//     struct, a pointer, a typed slice) is written by the msgpack
//     library, which follows it with no bound: the codec first follows
//     its pointers and interfaces as the library will, and refuses one
//     holding itself (var x any; x = &x; n.Next = n), nested deeper
//     than 10000 levels, or of a type the library cannot write (type P
//     *P, type E struct{ *E }), so the call ends invalid_input at the
//     client or internal at the worker. What a type's own encoder does
//     (msgpack.CustomEncoder, msgpack.Marshaler, MarshalBinary,
//     MarshalText) cannot be followed: one writing through the Encoder
//     it is given is bounded as it writes, but one recursing without
//     writing there (an EncodeMsgpack calling enc.Encode on its own
//     receiver, or on a pointer holding itself; a MarshalMsgpack calling
//     msgpack.Marshal on a value holding itself) overflows the stack,
//     which kills the process, with every call running in it. A tool's
//     own encoder must end on every value it is given.
//
// Measurements of this path (per-call cost against raw NATS, cancel
// latency, allocations) are in the README's benchmark section and in the
// output of cmd/bench.
package bus
