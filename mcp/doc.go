// Package mcp serves the tools of MCP servers from a toolbus Toolkit: each
// configured server (stdio, Streamable HTTP or legacy SSE) is listed and
// its tools are registered as mcp__{server}__{tool}, so agents call them
// like any other tool, in process or over the bus. In the other direction
// a Gateway serves the fleet's tools to MCP clients (see Gateway below).
//
//	tk := toolkit.New(nil)
//	c, err := mcp.NewClient(mcp.ServerConfig{
//		Name:      "everything",
//		Transport: mcp.TransportStdio,
//		Command:   "npx",
//		Args:      []string{"-y", "@modelcontextprotocol/server-everything"},
//	}, nil)
//	if err != nil {
//		log.Fatal(err) // an invalid configuration
//	}
//	defer c.Close()
//	if err := c.Start(ctx, tk); err != nil {
//		log.Fatal(err) // a configuration error; a server that is down is retried instead
//	}
//	for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "c1", Name: "mcp__everything__trigger-long-running-operation",
//		Input: map[string]any{"duration": 2, "steps": 4}}) {
//		switch {
//		case ev.Progress != nil: // the server's notifications/progress, in order
//		case ev.Final != nil: // exactly one, after all progress
//			fmt.Println(ev.Final.State, ev.Final.Text())
//		}
//	}
//
// A worker mounts every server of its configuration (mcp_servers:, see
// ServerConfig) with Mount, which returns a Servers set.
//
// # Registration
//
// Tools are named mcp__{server}__{tool}; in the tool part every character
// outside [A-Za-z0-9_-] becomes 'x' (ToolName), and the original name is
// what the server is called with. A server name holds no "__" and no '_'
// at either end, so a tool name (which may hold "__") never makes another
// server's tool's name. A server listing two tools under one name has
// the first one listed served, whole (its description, schema and key
// order, annotations), and the others not, with one warning for as long
// as its listings repeat them (ListTools returns the first too). A tool
// whose sanitised name collides
// with another, whose name is taken in the toolkit or over
// toolkit.MaxNameLen bytes, whose schema the toolkit refuses (nested
// deeper than toolkit.MaxSchemaDepth, say; one nested past 1000 levels
// fails a stdio server's whole listing, see Calls), or whose schema's references
// the validator would follow for ever ($ref, allOf, anyOf and their kin
// coming back to the same value without descending into it) or past
// 10,000 subschemas on one value, or cannot follow (internal/schemagraph),
// is skipped with a warning (once for as long as its listings repeat
// it), as is a tool past MaxServerToolBytes (512 KiB of one server's tools as
// the worker's announcement encodes them, names, descriptions, schemas
// and the rest: the worker announces all its tools in one NATS message,
// and one refused past max_payload would drop the worker from the fleet,
// or keep it from starting; a tool whose input schema alone is sure to
// pass it, counted on the schema as listed, titles left out, a byte a
// value and a string's or key's length more, is skipped so before its
// schema is converted, ordered or encoded: a million properties cost
// hundreds of MiB to convert, at every listing). The servers of one Mount share
// Options.MaxToolBytes besides (DefaultMaxToolBytes, 512 KiB, unless set;
// a worker gives its NATS server's max_payload less 384 KiB for the rest
// of its announcement): a server's registration takes only what the
// tools the others registered leave, first come first served (in
// configuration order at Mount; a server that comes up later, or grows
// at a re-listing, gets what is left and never pushes out another's
// tools). A tool that does not fit is left out, the tools that fit are
// registered, and the registration logs one error naming the server, how
// many tools were left out and the first, their bytes, the bytes
// registered, the room there was, the other servers' bytes and the
// limit. When a registration or a Close frees room, the servers that had
// tools left out list theirs again.
// The input schema is the server's, with "type": "object" and
// "properties" defaulted and titles stripped; $defs, $ref, anyOf and the
// rest are kept, and the toolkit validates input against it before a call
// is sent. Flags come from the annotations:
//
//	readOnlyHint             → ReadOnly (and so NoSideEffects)
//	idempotentHint           → Idempotent
//	destructiveHint, nothing → IdempotencyUnknown (never a safe retry)
//	(always)                 → not concurrency-safe
//
// enable_tools and disable_tools filter by the server's own tool names.
// Validate rejects an overlap, and an empty enable_tools (AgentScope
// registers no tool for enable_tools=[], where a list left out here
// registers all); an enable_tools name the server does not
// list is an error (ErrUnknownTool) when the tools are first registered;
// at a later re-sync (the server dropped the tool since) the tools it
// still has are synced, the dropped one leaving the toolkit, with a
// warning. The
// tools go in the configured group, which is created (with a generic
// description) when the toolkit lacks it; create it first to describe it.
// A server's tools are registered as one batch (toolkit.AddAll): one
// change of the toolkit, which the worker announces once, and no copy of
// the registry per tool (10,000 tools register in a fraction of a second,
// not seconds).
//
// # Keeping the tools current
//
// A server's tools are listed again, and the registration re-synced (new
// tools added and changed ones replaced in one batch, vanished ones
// removed in one change; unchanged ones left be, so the fleet hears of
// nothing), when:
//
//   - the server sends notifications/tools/list_changed, on whichever
//     session it is heard: the shared one, or a call's in stateless mode
//     (a stateless server can only tell during a call);
//   - a stateful client connects a new session after its first (the
//     server restarted, or forgot the session): a restarted server may
//     list other tools and tells a new session of no change;
//   - a call is answered that the server has no such tool (invalid params
//     naming the tool as unknown or not found): the server changed without
//     telling, and the tool it no longer has leaves the toolkit (the call
//     itself ends with tool_error; it is not sent again);
//   - every Options.RelistInterval (five minutes by default) for a server
//     that cannot tell of a change: a stateless one, or a stateful one
//     whose capabilities do not declare tools.listChanged. An upgraded
//     stateless server's new tools appear within that time without any
//     call. A stateless stdio server is started for each such listing.
//
// Listings run one at a time; however often they are asked for, at most
// one more waits, and those the first three ask for start a second apart
// at the least (a server announcing a change after every listing is not
// listed in a loop). A listing that fails because the server is down hands
// over to the background retry below.
//
// A server that cannot be reached or listed when Start runs is skipped
// with a warning and retried in the background (RetryInterval, doubling up
// to MaxRetryInterval); the worker keeps serving everything else.
//
// # Calls
//
// A call sends tools/call with the toolkit's (already validated) input as
// a JSON object, never null. Its result becomes one chunk:
//
//	text                          → text block
//	image, audio                  → data block (base64) with its media type
//	embedded resource, text       → text block: {"uri", "mimeType", "meta", "text"} as indented JSON (null when missing)
//	embedded resource, blob       → data block named by the resource URI
//	resource link                 → text block "[resource link] URI (name: …; title: …;
//	                                description: …; type: …; size: N bytes)", each part
//	                                only when the link has it
//	structuredContent             → metadata "structured_content", and its
//	                                JSON as a text block when there is no content
//	                                (the model reads content, not metadata)
//	_meta                         → metadata "mcp_meta"
//	isError                       → chunk state error: the final response has code tool_error
//
// A resource link or embedded text resource beside another text block
// merges with it into one text block (consecutive text merges); the
// content as the server sent it then also goes in metadata "mcp_content"
// (when its JSON is at most 64 KiB), and the gateway gives an MCP client
// that content while the final's content is still exactly what it became.
//
// A structuredContent or _meta nested deeper than 48 levels is kept in
// the metadata as its JSON text, a string: the bus's decoders take 64
// levels in a whole response.
//
// A stdio server's message nested deeper than 1000 levels is refused
// whole by the go-sdk's decoder, before it is known what it answers, and
// its connection ends: a listing holding an input schema nested so deep
// fails whole, as that of a server that cannot be reached does (the
// background retry above), none of the server's tools registered by it
// (that tool is not skipped alone as a schema the toolkit refuses is;
// that needs a reader of the server's stdout before the go-sdk's), and a call
// answered with a result nested so deep ends with tool_error
// ("MCPConnectionError: the connection to the MCP server … failed during
// the call …: exceeded maximum nesting depth of 1000"), the calls after
// it served on a new session.
//
// A JSON-RPC error from the server ends the call with tool_error and the
// server's message, and so does a result that cannot be read (a content
// type the go-sdk does not know, invalid base64) or a response holding
// neither a result nor an error, on a session that stays, and so does a
// Streamable HTTP or legacy SSE server's refusal of the request as too
// large (HTTP 413, 414 or 431, which the go-sdk alone takes for a broken
// connection: one caller's large arguments would end every call on the
// session), and so does a Streamable HTTP server's successful answer to
// a request in another media type than application/json or
// text/event-stream (a proxy's HTML page, a 202 or 204 with nothing: the
// error names the status, the type and the answer's first 200 bytes),
// or in application/json that is not a
// JSON-RPC message (read whole before the go-sdk reads it; the go-sdk
// alone takes either for a broken connection) or not the request's
// response (one to another id, a request or notification of the
// server's own, after which the go-sdk alone waits for a response that
// cannot come, until Timeout or for ever), and so does an event of a
// Streamable HTTP server's event stream answering a request whose data
// is not a JSON-RPC message (garbage, JSON nested past 1000 levels) or
// that holds a line that is no field (each event is held until it ends,
// up to MaxMessageBytes, and checked before the go-sdk reads it; the
// go-sdk alone takes it for a broken connection, ending every call on
// the session; the error quotes the data's first 200 bytes, and the
// stream ends there), and so does a Streamable HTTP response stream that ends
// without the call's result (also when the server refuses to resume it
// from its last event id; a 404 there still says the session is gone);
// a server that cannot be reached with unavailable; a connection that breaks during the
// call with tool_error (the next call reconnects; for a stdio server the
// error waits up to 2 s for the server to be closed, and says how it
// exited, unless the client had to signal it, or that it closed its
// stdout and had not exited by then or when the client's close signalled
// it, and the end of its stderr); ServerConfig.Timeout with timeout.
//
// Progress: each call carries a progress token of its own. Notifications
// are read off the wire (the stdio connection and HTTP event streams are
// tapped) in the order the server sent them, queued per call and written
// as w.Progress before the result; anything that arrives after the result
// is dropped. So a caller sees every progress report that preceded the
// result, in order, and none after the final response. (The go-sdk's own
// progress handler runs on a separate goroutine and can lag behind the
// result, which is why it is not used.) A progress notification on an
// event-stream line longer than 64 KiB is not seen. A call's queue is
// bounded (1024 notifications, 1 MiB): a server sending faster than the
// caller takes them has a newer progress report replace the last queued
// one and further log messages dropped, and the caller gets one warning
// log message with the count.
//
// Size: one message from a server is at most MaxMessageBytes (16 MiB):
// the go-sdk bounds stdio lines and event-stream events so (and an event
// past it ends its stream, which the go-sdk would otherwise read to its
// end), and a Streamable HTTP JSON answer past it fails its request, as
// does the body of an error status (any type: the go-sdk reads it whole
// for a JSON-RPC error). A tool listing
// is at most MaxListedTools tools and MaxMessageBytes of them (and of its
// pages' cursors) over all its pages.
//
// Cancel: cancelling the call's context cancels the request
// (notifications/cancelled); the final response is interrupted and the
// shared session stays in use for the next call.
//
// # Sessions and failures
//
// Stateful mode keeps one session per server. A session whose connection
// ends (a stdio server exits, an HTTP server forgets the session and
// answers 404) is replaced on the next use. A request that certainly did
// not reach the server (an expired session, a connection already closed,
// an HTTP request that could not be sent or was answered 503 or 429; not
// one answered 500, 502 or 504, which the server received) is sent again once on a new
// session; one that failed after it may have reached the server is sent
// again only for tools annotated read-only or idempotent; otherwise the
// call fails with a message that names the server. Connecting always has
// a deadline (ConnectTimeout, default 30s), so no call wedges on a server
// that does not answer the handshake; the calls that need the session
// while it is being connected wait for that one attempt and share its
// outcome (a server that does not answer fails them all at once with
// unavailable, not one ConnectTimeout after another).
//
// A stdio server runs in a process group of its own, ended whole when its
// session closes or fails to connect (a wrapper script's children with
// it), and on Linux the kernel kills it when the worker's process dies
// without closing it (SIGKILL, the OOM killer); a wrapper's children
// survive that one. Windows has no process groups: there a stdio
// server is refused when the configuration is checked, saying so, rather
// than started with nothing to end its children; HTTP servers work.
//
// Stateless mode opens a fresh session for every call and every listing
// (stdio: a new process each time, closed in the background; HTTP: no
// standalone event stream).
//
// # Runtime headers
//
// Client.SetRuntimeHeaders (and Servers.SetRuntimeHeaders by server name;
// Servers.Apply takes a wire.HeadersRequest, the body of the worker's
// control operation) replaces the headers sent with later HTTP requests,
// without reconnecting: the session ID stays. They
// are layered over the configured headers; an empty map restores the
// configured ones. Host, Content-Length, Connection, Transfer-Encoding,
// Content-Type, Accept, Mcp-Session-Id and Mcp-Protocol-Version belong to
// the transport: they are rejected, in the configuration and at runtime. The standalone
// event stream, already open, keeps the headers it was opened with.
//
// The worker's control operation is a NATS request on
// tools.control.<instance>.mcp_headers (wire.HeadersSubject), answered by
// ServeRuntimeHeaders: the body is a wire.HeadersRequest in msgpack, or
// JSON with Content-Type: application/json, and the reply a
// wire.HeadersReply in the same encoding.
//
//	nats req tools.control.w1.mcp_headers '{"server":"search","headers":{"Authorization":"Bearer B"}}' -H Content-Type:application/json
//	{"ok":true}
//
// # OAuth
//
// A Streamable HTTP server with ServerConfig.OAuth is authorized by OAuth
// 2.1 (oauth.go): a person runs the authorization code flow once (toolctl
// mcp login, or a client with Options.AuthorizationCodeFetcher, such as
// LoopbackAuthorizer) and the Grant goes to a GrantStore that every worker
// reads (KVGrants, the fleet's toolbus_oauth bucket); workers refresh it one
// at a time and write it back. A client with no usable grant fails with
// ErrNeedsAuthorization, naming the command to run. The client_credentials
// grant needs no person: each client obtains its own tokens. The
// enterprise grant (oauth_enterprise.go) stores a person's sign-in at an
// identity provider (EnterpriseLogin), which each client exchanges for
// tokens.
//
// # Server requests, resources and prompts
//
// A server's sampling and elicitation requests and its log messages go to
// the caller of the call they belong to (relay.go: attributed by session).
// A stdio or legacy SSE server has at most maxServerAsks requests
// (maxServerAskBytes of params) unanswered: its further ones are dropped
// unread, unanswered, with a warning, as when it sends them without
// reading the answers or completing their POSTs (asks.go; the go-sdk's
// SSE client takes a failed POST of an answer for a broken connection,
// so no answer is failed, and one whose POST the server never completes
// holds its place until the session ends). A Streamable HTTP server
// has at most maxServerAsks requests being handled or answered, each
// answer's POST given answerPostTimeout to be accepted: its further
// requests are refused unhandled (a sampling or elicitation request
// never reaches a caller) and further answers, those refusals too,
// dropped unsent, with a warning (once per Client), as when it never
// completes their POSTs (answers.go).
// Its resources, resource templates, prompts, completions and resource
// updates are announced and passed on for the gateway (Servers.Announce,
// ServeMounted, mounted.go; the gateway's side in gateway_mounted.go).
// What is passed on is never answered from, nor kept in, the go-sdk's
// result caches (ttlMs, protocol 2026-07-28): the worker's session is
// long-lived and shared by every gateway client (uncachedResults). Of
// the tools listed it keeps the last listing only, whatever cursors the
// server pages it with.
//
// # Gateway: the fleet as an MCP server
//
// A Gateway goes the other way: it is an MCP server whose tools are the
// fleet's, so any MCP client (an IDE, the MCP Inspector, another agent
// framework) lists and calls them, and the calls go over the bus.
//
//	nc, err := nats.Connect("nats://127.0.0.1:4222")
//	if err != nil {
//		log.Fatal(err)
//	}
//	g, err := mcp.NewGateway(ctx, nc, nil) // a bus client and a watch on the group state
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer g.Close()
//	err = g.ListenAndServe(ctx, "127.0.0.1:8808") // Streamable HTTP at http://127.0.0.1:8808/mcp
//	// or, for a client that starts the gateway as its child process:
//	// err = g.ServeStdio(ctx, "agent-7")
//
// A Gateway is also an http.Handler, to mount anywhere; ServeListener
// serves it on a listener of your own. From the command line:
// `toolctl mcp serve --listen 127.0.0.1:8808` and `toolctl mcp stdio
// --session my-agent` (a toolctl command rather than a worker flag, so it
// runs wherever the MCP client is and needs no tools of its own).
//
// Stopping: once ServeListener's ctx ends, with GatewayOptions.StopGrace
// the calls in flight may finish for that long before they end
// interrupted. A call is in flight while a request carries it, and while
// its response stream, closed for polling (GatewayOptions.StreamPoll),
// awaits its client's resume (a stream not resumed within a minute of its
// close is taken as abandoned, and not waited for). Meanwhile the listener stays open for those
// calls' clients and serves only what serves them: a call's stream
// resumed with Last-Event-ID, a session's POST carrying only answers,
// notifications and pings (the answer to a call's elicitation, a cancel,
// a keepalive ping, which a client failing it may take for a lost
// session), and a session's DELETE; anything else, a new session or call
// among them, is
// answered 503, and a connection closes after its answer. Without
// StopGrace the listener closes at once.
//
// Sessions: every MCP session is a toolbus session. Over Streamable HTTP
// (stateful) it is the Mcp-Session-Id the gateway assigns (128 random
// bits); over stdio there is one session per process, named by the caller
// (or random), so a client that restarts the process with the same name
// keeps its group activation. tools/list shows what
// bus.Client.SessionSchemas gives the session (the listing toolctl uses
// too, narrowed by GatewayOptions.Client.Filter): reset_tools when the
// fleet has groups, then the basic tools and the active groups' tools, in
// the fleet's order (the order a toolkit lists itself: the gateway answers
// tools/list itself rather than with the go-sdk's list sorted by name).
// Each session has a go-sdk server of its own, so when its list changes
// that session, and only it, is sent notifications/tools/list_changed: a
// worker joins, leaves or announces other tools (discovery.Fleet.OnChange), or the
// session's activation is written, through the gateway's reset_tools or
// by anyone else (reset_tools on the bus, toolctl groups set; the gateway
// watches the group-state bucket).
// A tool whose schema is not an object (MCP requires one) is left out
// with a warning. Flags become annotations:
//
//	ReadOnly                            → readOnlyHint, destructiveHint false
//	ReadOnly, Idempotent, NoSideEffects → idempotentHint
//	otherwise                           → destructiveHint unset (MCP's default: true)
//
// Calls: tools/call becomes a bus call in the session (carrying the
// groups revision of its last reset_tools). Arguments must be a JSON
// object (absent or null means {}); anything else is answered isError
// with code invalid_input. A call of a tool the session does not list goes
// to the fleet all the same, so the model gets toolbus's answer (not_found,
// or group_inactive with what to do), not a JSON-RPC "unknown tool". A streaming tool's chunks are accumulated
// (MCP has no partial results) and the final response becomes the result:
//
//	text block                         → text (a mounted server's embedded
//	                                     text resource or resource link, as
//	                                     its text block renders it: that
//	                                     resource or link again)
//	data block, image/* or audio/*     → image or audio
//	data block, text/* (UTF-8)         → embedded resource (text)
//	data block, any other media type   → embedded resource (blob); for both, the URI
//	                                     is the block's name when that is a URI,
//	                                     else toolbus:data/<block id, or call id-index>
//	data block by URL                  → resource link
//	metadata mcp_content               → that content instead (see Calls above)
//	metadata structured_content        → structuredContent (when an object)
//	the rest of the metadata           → _meta "toolbus/metadata"
//	state, code, session               → _meta "toolbus/state", "toolbus/code", "toolbus/session"
//	state error, interrupted or denied → isError (no state: its code's)
//	chunks lost on the way              → a last text saying the output is
//	                                     incomplete
//
// Progress frames become notifications/progress on the client's
// progressToken (nothing when it sent none), in order and all before the
// result. Cancel: notifications/cancelled cancels the handler, the bus
// client publishes the call's cancel, the tool sees ctx.Done, and the
// session stays usable. A call ended by the gateway's own stop (its
// Interrupt, as toolctl mcp calls on a signal, its Close, or the end of
// the listener or stdio session it came through) ends interrupted with
// GatewayStoppedText, "The tool call has been interrupted because the MCP
// gateway serving it shut down.", in place of the worker's
// toolkit.InterruptedText, which would tell the model that the user
// stopped it; the output before it is kept. (A second Close, from
// anywhere, returns once the first one's shutdown is done, with its
// error.) Close closes the HTTP
// sessions only once those results are written (for at most 5 s), so a
// client whose call's POST is open gets its result. So does a call whose session
// the gateway closes for its bounds, with GatewayIdleClosedText (no
// request of the session open for SessionTimeout) or GatewayMadeRoomText
// (ended to make room for another source's session, MaxSessions): the
// session is closed once such calls' results are written (for at most
// 5 s), so a client whose call's POST is open gets that result rather
// than a stream ended without one, and the gateway's warning for the call
// says why it ended. A client that comes back with the id of a session
// so closed, of one its DELETE ended (from the DELETE's answer on) or of
// one the gateway's Close ended (a gateway mounted on a server that goes
// on serving) is answered 404 (a GET, POST or DELETE), as MCP wants for a
// session that ended (the client initializes a new one), with a text
// saying why and to initialize a new session; once the gateway is closed,
// saying that it is closed and opens no new sessions instead, and an
// initialize is answered 503 saying so (a status Streamable HTTP clients,
// the go-sdk's among them, take for a passing refusal, to try again
// later, when a gateway may serve there again). At most 1024 such
// sessions are remembered (another id gets the go-sdk's "session not found"), by
// source as MaxSessions counts them (below: the bearer token's identity,
// else the peer's address; the gateway authenticates clients by bearer
// token or not at all, and without tokens every session calls as one
// identity, so the address is what tells clients apart): at the bound the
// oldest of the source holding the most is forgotten, so a client that
// opens and ends sessions in a loop forgets its own, not another
// client's. GatewayOptions.CallTimeout bounds calls;
// SessionTimeout closes idle HTTP sessions (30 minutes by default), and
// MaxSessions bounds those open at once (1024 by default; only a POST
// whose body holds an initialize the go-sdk may serve opens a session:
// a server/discover probe, a ping, a notification or a request the go-sdk
// refuses is answered as the go-sdk answers it, with no session built over
// the bus and no room made for it, and one the go-sdk refuses from its
// headers alone without its body read; see gateway_refused.go), fairly
// between sources: at the
// bound, an initialize from a source holding at least two sessions fewer
// than the source holding the most ends that one's least recently used
// session (preferring one without a call in flight), and any other
// initialize is answered 503. A source is the bearer token's identity
// when GatewayOptions.Tokens are set, else the peer's address (its /64
// for IPv6, the network a host is commonly given). X-Forwarded-For and
// its kin are not read, since any client can write them: clients behind
// one NAT or reverse proxy are one source and share one share; tokens
// tell them apart. A session's calls in flight are cancelled on the bus
// when it ends: its DELETE, no request of it open for SessionTimeout (a
// client that died mid-call), the gateway's Close, the end of the
// listener it came through (the go-sdk closes a session only once its
// calls return), or the bound making room for another source; so are its
// resource, prompt and completion requests waiting for the fleet (the
// worker's own bound ends what it passed on to a mounted server). The
// legacy SSE transport is not served.
//
// Subscriptions: a client of protocol 2025-11-25 or older subscribes to a
// resource of a mounted server with resources/subscribe, which is answered
// once the gateway holds the subscription, and hears
// notifications/resources/updated on its session. From 2026-07-28 (over
// stdio and Serve; stateful HTTP serves up to 2025-11-25) a client opens a
// subscriptions/listen request instead and hears the updates, and
// notifications/tools/list_changed, on it; the gateway holds the
// subscription once it has sent notifications/subscriptions/acknowledged,
// the stream's first message. The go-sdk's ClientSession.Subscribe (v1.8.0)
// returns as soon as it has sent that request, without waiting for the
// acknowledgement, which it does not pass on (a client's receiving
// middleware sees it), and so does Connect with the stream for list
// changes: an update or change before the acknowledgement goes unheard.
// Nor is such a client told of a refused subscription (a URI no visible
// server takes): the go-sdk answers the listen with an error and no
// acknowledgement, Subscribe has returned nil, and subscribing to the URI
// again does nothing until Unsubscribe. A client that must not miss an
// update waits for the acknowledgement that lists the URI, or reads the
// resource once it has it. A session holds at most 256 subscriptions
// (64 KiB of URIs); past that a subscribe to another URI is refused with
// an error saying so until the client unsubscribes from one. Each
// session is told its updates and list changes apart from the others
// (updates from a queue and goroutine of its own, list changes from its
// own go-sdk server), so a client that stops reading delays only its own.
//
// Connections: ServeListener (and ListenAndServe) bound what a client on
// the network can hold: a request's headers must arrive within 10 s, its
// body (at most 4 MiB, the go-sdk's bound, else 413; its JSON-RPC ids
// checked first, see Gateway) within 30 s (only a POST's body is read:
// a GET or DELETE announcing one is served without it and its connection
// closed after, rather than held as a request in progress while the body
// does not come), and
// each write of an answer must be taken within 30 s, else the connection
// is cut (a client that stops reading would otherwise hold the call
// writing to it, and the session's DELETE waiting for that call, for
// ever; the events it missed stay in StreamBuffer for its Last-Event-ID,
// and the call goes on); a kept-alive connection without a request for 2
// minutes is closed; at most GatewayOptions.MaxConns connections (4096 by
// default) are held, a new one at the bound taking the place of one
// waiting for a request, from the address holding the most, or of a POST
// whose body has not come for 2 s, which is answered (408 when the
// gateway was reading its body) and its connection closed (a request in
// progress whose client reads and sends, an event stream and a body that
// comes slowly included, is never cut; when all are serving one, the new
// connection is closed at once); and one session runs at most
// GatewayOptions.MaxSessionCalls requests that reach the fleet at
// once (256 by default), tools/call and resource, prompt and completion
// requests counted together: past it a call ends overloaded and another
// request gets a JSON-RPC error, both TooManyCallsError, without reaching
// the fleet (a JSON-RPC batch of an old protocol version holds up to
// 1024 messages, a longer one refused whole with HTTP 400 and a JSON-RPC
// Invalid Request naming the bound, and a resources/read or prompts/get
// costs a worker as a call does); all sessions together run at most GatewayOptions.MaxCalls
// of them at once (4096 by default), refused past it the same way, so
// that the gateway does not hold MaxSessions × MaxSessionCalls (262,144)
// requests in memory.
// The http.Server's own ReadTimeout and WriteTimeout
// would end event streams, which last as long as their sessions, so these
// deadlines are set and lifted per body and per write. A Gateway mounted as an http.Handler in a
// server of your own has the bounds that server sets.
//
// # Decisions where AgentScope is silent or differs
//
//   - Runtime headers work on both HTTP transports (the SSE transport's
//     POSTs carry them too); only stdio rejects them.
//   - stdio servers may run stateless (a process per call); it is slow
//     but sometimes what an isolated tool needs.
//   - Resource links and blob resources are converted, not dropped, and
//     structuredContent is kept in the metadata (and, when the result has
//     no content, given to the model as JSON text).
//   - A tool the server gives no description is described by its title,
//     where AgentScope's description is then "".
//   - A result with isError and no content reads "The MCP tool reported
//     an error without a message.", where AgentScope's error is empty.
//   - Timeout bounds a call; ConnectTimeout bounds connecting and listing.
//   - Roots are not offered to servers (a worker has none); sampling and
//     elicitation are, and go to the caller of the call (relay.go).
//   - An HTTP server's requests go to the origin (scheme, host, port) of
//     its configured URL only: a legacy SSE server naming its message
//     endpoint at another origin, or a redirect there, fails the request
//     (as the TypeScript SDK refuses such an endpoint). Configure the URL
//     the server answers at.
package mcp
