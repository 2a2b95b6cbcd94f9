// Package toolkit is the transport-agnostic core of toolbus: typed tools
// with inferred schemas, tool groups and the reset_tools meta tool,
// streaming with AgentScope 2.x accumulation, interrupts, and middleware.
// The bus package serves a Toolkit on NATS; in process it is called
// directly:
//
//	type EchoIn struct {
//		Text string `json:"text" jsonschema:"the text to echo"`
//	}
//
//	tk := toolkit.New(nil)
//	err := tk.Add(toolkit.Func("echo", "Echo the text back.",
//		func(ctx context.Context, in EchoIn) (string, error) { return in.Text, nil }),
//		toolkit.ReadOnly())
//	if err != nil {
//		log.Fatal(err) // a bad definition fails here, loudly
//	}
//	for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "hi"}}) {
//		switch {
//		case ev.Chunk != nil: // a delta, as it is produced
//		case ev.Final != nil: // exactly one, always last
//			fmt.Println(ev.Final.State, ev.Final.Text()) // success hi
//		}
//	}
//
// # The call path
//
// Every call goes through the same steps, and every step's failure is a
// result for the model (a final Response with a State and a Code), never a
// Go error:
//
//	lookup ──▶ group active? ──▶ validate input ──▶ middleware onion ──▶ presets ──▶ tool
//	not_found   group_inactive    invalid_input     (first = outermost)
//
// A tool's error becomes tool_error, a panic internal (the process keeps
// serving), a cancelled context interrupted (with AgentScope's
// <system-reminder> chunk, InterruptedText, "interrupted by the user";
// DrainedText instead when the cause is ErrDraining, its worker shut
// down; partial output is kept) and a passed deadline timeout. Go errors are for programmers only: Add, AddGroup and friends
// reject bad definitions when they are registered.
//
// Registration is copy-on-write: a call sees the registry as it was when
// it started, and never waits for a registration. Each Add copies the
// registry, so registering many tools one Add at a time costs O(n²);
// AddAll registers a batch with one copy and one OnChange, all or nothing
// (a *BatchError names every registration refused).
//
// # Streaming
//
// Tools write chunks (deltas) to a Writer. The caller sees each chunk as it
// is written, then one final Response that accumulates them exactly as
// AgentScope 2.x append_chunk does (see Accumulator). Progress reports are
// UI-only and never part of the result.
//
// # Groups
//
// Tools belong to groups; "basic" is always active. Activation is per
// session and stored in a GroupState (in memory here, JetStream KV on the
// bus). The meta tool reset_tools receives the complete final set of active
// groups; its schema lists every group with its description and whether it
// is active now.
//
// A toolkit serving in a fleet may lack a group another member serves:
// when a reset_tools call names a group the toolkit does not have and the
// transport gave the call WithFleetGroups, the fleet's groups count too (the
// toolkit's own first, in its order, then the fleet's others, in the
// fleet's), for the check, the stored state and the instructions in the
// answer. A session may thus have active a group of which this toolkit
// has no tool; it lists and runs its own tools as before.
//
// # Decisions where AgentScope is silent or differs
//
//   - 1.x's streaming is not kept: chunks are 2.x's deltas, so a tool
//     ported from 1.x, which yields the whole content so far each time,
//     writes only what is new, and the stream ends when the tool returns
//     (there is no is_last). 1.x's per-tool postprocess_func is a tool's
//     own middleware here (WithMiddleware), as in 2.x, and its background
//     execution (async_execution with view_task, wait_task and
//     cancel_task) is not offered.
//   - Presets are authoritative: a preset key sent by the model is dropped
//     before validation and the preset value is used (unlike 1.x, where the
//     model's input won). They are merged innermost, right before the tool
//     (as 1.x does): middleware, logs and traces never see their values.
//     WithPresets refuses, at Add, an empty map and a key that is not a
//     property of the tool's schema, where 1.x takes any preset_kwargs
//     (none, or a key only **kwargs would take): a typed tool's decoder
//     would drop such a key without a word. It also refuses a value its
//     property's schema refuses (a string for an integer), which 1.x
//     passes to the function: merged after the model's input is
//     validated, it would fail every call as the model's invalid input,
//     the decoder's message quoting a number preset; nor a value a typed
//     tool's decoder refuses though its schema takes it (a time.Time
//     given another layout), whose message would quote it. The properties'
//     schemas are checked alone (with $defs and definitions), not the
//     root's other keywords, and the error never shows the value.
//   - Input is validated against the tool's schema in the toolkit (2.x does
//     it in the agent), so every transport gets the same checks.
//   - Name collisions are an error by default; OnConflict(ConflictOverride)
//     replaces in place, OnConflict(ConflictSkip) keeps the first and
//     OnConflict(ConflictRename) registers the new tool as name_XXXXX
//     (AgentScope's rename; Tool.OriginalName keeps the name). The name
//     reset_tools is reserved: Add refuses it, where a 2.x tool of that
//     name replaces the built-in meta tool (with a warning).
//   - A block with an empty ID never merges by ID (adjacent text still
//     merges), so tools need not invent IDs.
//   - A deadline ends the call with state error and code timeout; the
//     partial output is kept.
//   - A typed tool whose input field has a `default` tag receives that
//     default when the model leaves the field out (the schema advertises
//     it, so the tool must not see Go's zero value instead). `enum`,
//     `minimum` and `maximum` tags add those keywords to the inferred
//     schema, on the fields of nested structs too; jsonschema-go itself
//     reads only descriptions. On a list field they constrain the
//     elements ("items"), as pydantic writes list[Literal["a", "b"]], and
//     the enum of a field that takes null (a pointer) takes null too, as
//     Optional[Literal[...]] = None does. A json.RawMessage field takes any JSON.
//   - A `json` tag name that encoding/json ignores (isValidTag: one with a
//     backslash, a quote or another character outside letters, digits,
//     spaces and !#$%&()*+-./:;<=>?@[]^_{|}~) is refused at Add, on a
//     nested struct's fields too: the schema would name the property by
//     the tag while encoding/json decodes the field by its Go name, so the
//     value the model sent would never reach the tool. So is the tag's
//     string option on a string, number or bool field (`json:"n,string"`):
//     encoding/json would take only a JSON string holding the value ("5"),
//     where the schema asks for the field's type (5), so no input could
//     set the field. So is a field of a non-empty interface type
//     (fmt.Stringer, error; in a slice or map too): its schema takes any
//     value, and encoding/json decodes none but null into it. So is an
//     embedded pointer to an unexported struct type (struct{ *paging }):
//     its fields are in the schema, and encoding/json cannot allocate
//     the struct to decode them. So are two fields under one JSON name
//     (two tags alike, a tag naming another field, a field and one an
//     embedded struct promotes): the schema has one property, with the
//     last one's type, and encoding/json decodes its value into the
//     field it prefers, or into neither. So is a recursive type (a tree:
//     a struct holding itself through a slice, a map or a pointer),
//     whose schema jsonschema-go does not infer; the error names the
//     field, which a json.RawMessage (or a type decoding itself) can
//     take the place of, or a Raw tool's schema can refer to itself. A
//     field of type any takes any JSON value; one tagged "-" is no input.
//   - A typed tool's inferred object schemas are closed ("additionalProperties":
//     false, which AgentScope's pydantic schemas leave out), so an argument
//     the function does not take ends invalid_input before the tool runs,
//     where AgentScope's call fails with Python's TypeError.
//   - A typed tool's schema has jsonschema-go's shapes, not pydantic's: a
//     nested struct is written inline where pydantic refers to it ($defs
//     and $ref), and a pointer or slice field takes null as
//     "type": ["null", T] where pydantic writes Optional[T] = None as
//     anyOf of T and null with "default": null (a slice, list[T], takes no
//     null there). A field whose type decodes itself from text (a
//     TextUnmarshaler that is not a json.Unmarshaler: net.IP,
//     netip.Addr) is a string, the only value encoding/json gives it
//     (its enum and default tags are strings too), and a big.Int an
//     integer. A field whose type decodes itself from JSON (a
//     json.Unmarshaler: a struct read from "5s", an int from "high")
//     takes any value, {} (with its jsonschema tag's description; an
//     enum tag constrains it, in JSON), since only its UnmarshalJSON
//     knows what it takes: what that refuses ends invalid_input, quoting
//     its error. Its own fields are no input, and are not checked. Such
//     a type embedded (it or one decoding itself from text) is an error
//     at Add: it adds no properties, and its method, promoted, would
//     decode the whole input; a field of its own name takes its place.
//     An input struct decoding itself from JSON (its own UnmarshalJSON)
//     is an open object, {"type": "object", "properties": {}}, taking
//     any properties: its fields do not say what its method takes, so
//     every input reaches the method, and what it refuses ends
//     invalid_input. A schema set on the Tool before Add (Tool.InputSchema)
//     takes its place, as it does any inferred one; a preset needs one
//     naming its property. An input struct decoding itself from text
//     alone (UnmarshalText, no UnmarshalJSON) is an error at Add:
//     encoding/json decodes it from a JSON string only, never from an
//     object.
//     time.Time and slog.Level are strings, as jsonschema-go writes them.
//   - A Func's float result is written as Go's JSON writes it (10 as "10",
//     1e16 as "10000000000000000"), not as Python's float repr ("10.0",
//     "1e+16"): a float64 cannot tell a computed float from a whole number
//     decoded from the model's input, which Python holds as an int. A
//     NaN or an infinity is written as json.dumps writes it, alone
//     ("NaN", "Infinity", "-Infinity") and inside a map, slice or struct
//     ({"mean": NaN, "max": Infinity}: not JSON, as json.dumps's is not),
//     where encoding/json refuses it. Only one it cannot tell from the
//     value (in a `json:",string"` field, or beside a float spelling
//     the stand-in it is written as, a subnormal float near 2.2e-308)
//     still ends the call tool_error with the JSON encoder's error.
//   - The detail after "Input validation failed for tool '<name>': " is the
//     Go validator's wording (required: missing properties: ["q"]), not
//     Python jsonschema's ('q' is a required property). So is the message
//     ToolJSONDecodeError's text quotes from the JSON decoder: Go's
//     (invalid character 'a' looking for beginning of value), not Python
//     json's (Expecting value: line 1 column 1 (char 0)).
//   - StripTitles also strips the titles inside anyOf, oneOf, allOf, not,
//     patternProperties and definitions, where AgentScope's
//     _remove_title_field stops at properties, items, additionalProperties
//     and $defs.
//   - Data with a URL source written under an existing block ID ends the
//     call tool_error with its own text (not AgentScope's, which prints
//     both sources' pydantic reprs), and the rest of that chunk is still
//     accumulated, where append_chunk stops at the failing block.
//   - RemoveGroup of a group that does not exist is an error, where 1.x
//     remove_tool_groups ignores the name (it refuses "basic", as here).
//   - An empty "required" is dropped from every schema the model sees,
//     as 1.x register_tool_function drops it (2.x keeps an MCP tool's).
//   - A group's Instructions are a string, so "" is 2.x's None: an
//     activated group with "" leaves reset_tools' <tool-instructions>
//     block out, where 2.x writes the block's header for "".
//   - ImportState refuses a state naming a group that does not exist,
//     where 1.x load_state_dict ignores such names (its strict refuses
//     only keys other than active_groups).
//   - A number without a fraction is an integer, as JSON Schema (2020-12
//     and draft-07 alike) counts one: 3.0 passes "type": "integer", so a
//     Go caller whose Input encoding/json decoded (where every number is
//     a float64), or a client sending msgpack floats, needs no RawInput,
//     and a typed tool's int…int64 and uint…uint64 fields receive the
//     number converted (3), in nested values too, as pydantic's lax int
//     converts 3.0. A fraction (3.5), NaN and ±Inf fail "type"; a number
//     outside the field's Go type fails the inferred minimum and maximum
//     (int8 to int32, uint8 to uint32, and 0 for every unsigned type) or,
//     for int, int64 and uint64, whose bounds a float64 cannot hold, the
//     decoder ("cannot unmarshal number 10000000000000000000 … of type
//     int"). All end invalid_input before the tool runs. A float64
//     beyond ±2^53 is whole and is taken as the integer it holds, which
//     may be a neighbour of the one the caller wrote (see below).
//   - An integer in a model's arguments beyond float64's exact range
//     (±2^53) that fits an int64, or a uint64 past int64, reaches the
//     tool exact, as Python's json keeps it (ExactIntegers: as an int64,
//     or a uint64); an `enum` tag with one is refused, since the
//     validator holds enums as float64. One past uint64 stays the
//     nearest float64, which an integer field refuses.
//   - A json.Number in Input (a Go caller's encoding/json Decoder with
//     UseNumber, which keeps big integers exact), in nested maps and
//     slices too, is the number it spells, as encoding/json writes it:
//     before validation each becomes its NumberValue (an integer as an
//     int64, or a uint64 past int64; any other number a float64) in a
//     copy of the caller's maps and slices, so it passes "type":
//     "integer" or "number" as that number, an integer beyond ±2^53
//     reaches an int64 or uint64 field exact, and a tool's Call.Input
//     holds no json.Number. So is one in a typed slice or string-keyed
//     map a Go caller builds ([]json.Number, map[string]json.Number, a
//     []map[string]any holding one), which then reaches the tool as the
//     []any or map[string]any a decoder gives; typed slices and maps
//     whose elements cannot hold one ([]string, []int, map[string]int)
//     are not walked, and are validated and reach the tool as given
//     (a typed tool's fields as from []any). One that is not a JSON
//     number ("abc", "0x10", "") or is beyond a float64's range (1e400)
//     ends invalid_input, naming where it is (/l/1: json.Number "abc" is
//     not a number), and so does an Input nested deeper than the walk
//     looks (10000 levels, which only a map holding itself reaches).
//     The bus's client writes a json.Number as that number too (a
//     msgpack integer, or a float64), in typed slices and maps too
//     (NumberValues), and refuses one NumberValue refuses, or an Input
//     nested deeper than 10000 levels (its maps, slices, structs,
//     pointers and interfaces, as one holding itself is), as
//     invalid_input before sending the call; a tool's output nested so
//     deep ends its call internal. A type's own msgpack encoder
//     (EncodeMsgpack, MarshalMsgpack) is not followed: one recursing on
//     itself without writing kills the process that runs it (package
//     bus says which).
//   - reset_tools' schema is not 2.x's word for word: its description
//     ends with "\n\nCurrently active groups: a, b." (or "none."), and
//     each group's property description with " (currently active)" or
//     " (currently inactive)" (agentscope #2413; 2.x's schema shows no
//     activation, so its models activate active groups again). Its
//     answer's text is 2.x's, but its metadata carries active_groups and
//     groups_revision (MetaActiveGroups, MetaGroupsRevision), where 2.x's
//     is {}, and its chunk is running, as every tool's (2.x main writes
//     that one chunk as success; the final is success in both).
//   - The skill viewer (SkillViewerName) is listed first, then
//     reset_tools, as 2.x lists them, and only while a skill of basic or
//     of an active group exists (ListedWith, which package skill sets).
//   - A tool's Ask in process is answered by the caller context's
//     WithAsker, as over the bus; without one it gets ErrCannotAsk.
//   - Schemas keep declaration order in the JSON the model sees (order.go):
//     a typed tool's properties in field order, as AgentScope keeps a
//     function's signature order, and reset_tools' groups in registration
//     order. Schemas are maps, so the order travels beside them
//     (Function.Order, announced with the tool) and every JSON encoding of
//     a schema the model reads follows it (FunctionSchema's, the gateway's
//     tools/list, toolctl tools --json). Mounted MCP servers' schemas keep
//     the order the server wrote (read off the wire; not over legacy SSE);
//     Raw tools' maps have none (WithSchemaOrder gives one) and come out
//     sorted.
//   - A schema is refused at Add, as the MCP client refuses a server's,
//     when its references come back to the same value without descending
//     into the input ({"$ref": "#"}, two $defs naming each other) or apply
//     more than 10,000 subschemas to one value: the validator would
//     overflow the stack at the first call (a fatal error) or never end.
//     A schema recursive through a descent (a tree, an expression of
//     and/or/not) is kept, but one whose branches descend alike is
//     validated once per path, ~2^n times for an input n levels deep, and
//     validation cannot be stopped: for a recursive schema, or one whose
//     references multiply its paths to more than 8 per subschema it holds
//     (anyOf of two references to the next link, link after link), each
//     input's cost is counted first (internal/schemagraph, a walk that
//     counts each pair of subschema and value once), and one that would
//     apply more than 1,000,000 subschemas ends invalid_input with
//     InputTooComplexError, unvalidated. Calls of other schemas (shared
//     $defs among them) never count.
//   - Chunks are accumulated before they are handed to the caller, so a
//     caller that changes a chunk cannot change the final response.
//   - The common flat schema (properties with only a primitive type) is
//     checked without the general validator, and flat scalar structs are
//     decoded without a JSON round trip. Both only short-cut inputs they
//     can prove valid; everything else takes the general path, which also
//     writes the message, so no outcome differs.
//   - A typed tool (Func, Stream) receives its input as encoding/json
//     decodes it, so a string that is not valid UTF-8 (msgpack strings
//     are bytes; decoding a JSON body already replaces them) reaches it
//     with each invalid byte replaced by U+FFFD, whatever its input
//     struct, flat or not: a file_path "caf\xe9.txt" names
//     "caf\uFFFD.txt" in every file tool. AgentScope never sees such a
//     string (the model's arguments are decoded JSON, a Python str), so
//     no tool is written to expect one. A Raw tool gets the bytes as
//     given, and so does the validator, which counts (minLength) and
//     matches (pattern) an invalid byte as one U+FFFD, so the replaced
//     string passes as the given one did.
//
// Ready middlewares (logging, timeout, rate limit, cache, retry) are in
// the middleware subpackage.
package toolkit
