package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolbus/toolbus/internal/schemagraph"
)

// Group is a named set of tools that a session activates and deactivates
// as a whole (with the reset_tools meta tool). The "basic" group is
// implicit and always active.
type Group struct {
	Name string
	// Description is required: the model reads it in reset_tools' schema.
	Description string
	// Instructions are returned to the model when the group is activated.
	// Empty means none.
	Instructions string
	// Active is the group's state for sessions that have never called
	// reset_tools.
	Active bool
}

// Options configure a Toolkit. A nil *Options means the defaults.
type Options struct {
	// State stores per-session activation; nil means NewMemoryState().
	State GroupState
	// Logger receives panics and skipped registrations; nil means
	// slog.Default().
	Logger *slog.Logger
	// MetaResponseTemplate overrides the text/template that renders
	// reset_tools' answer. It receives .Groups, the activated groups in
	// toolkit order. Empty means DefaultMetaResponseTemplate.
	MetaResponseTemplate string
	// MaxResultBytes bounds the output one call accumulates (the
	// Chunk.Size and Chunk.MetaSize of each chunk written, and 256 bytes
	// for each block kept after the first, what the accumulator holds for
	// one beyond its bytes): a chunk that would take it past the bound
	// is neither kept nor streamed, the call fails with tool_error
	// (ToolOutputTooLargeError), and the tool's writes from then on
	// return ErrOutputTooLarge. The message of an error that ends a call
	// is cut to what the bound leaves (1 KiB at least), saying how much
	// was cut; its Error.Metadata counts as a chunk's metadata does, and
	// the entries that do not fit what the message leaves (taken in key
	// order) are dropped, the message naming them. 0 means
	// DefaultMaxResultBytes; negative, no bound.
	MaxResultBytes int
	// OnRefused, when set, is told of every call answered without
	// running its middleware chain, which a logging middleware therefore
	// never sees: Dispatch's unknown tool, inactive group, unreadable
	// group state and input that does not validate, and what a transport
	// reports through Refused (a bad request, an overloaded worker, a
	// cancel that came first). It runs on the call's goroutine and must
	// not block.
	OnRefused func(ctx context.Context, call ToolCall, r *Response)
}

// DefaultMaxResultBytes is Options.MaxResultBytes's default: 64 MiB.
const DefaultMaxResultBytes = 64 << 20

// Conflict says what Add does when a tool with the same name exists.
type Conflict int

const (
	// ConflictError (the default): Add returns an error.
	ConflictError Conflict = iota
	// ConflictOverride: the new tool replaces the old one in its position.
	ConflictOverride
	// ConflictSkip: the old tool stays; Add logs and returns nil.
	ConflictSkip
	// ConflictRename: the new tool is registered under the name plus "_"
	// and five random characters (AgentScope's rename: name_XXXXX, up to
	// 100 tries); Tool.OriginalName keeps the name it was given. A name
	// within six bytes of MaxNameLen is cut to make room for the suffix.
	// Add logs the new name; Tools and Schemas list it.
	ConflictRename
)

// Toolkit is a registry of tools and groups plus the dispatcher that runs
// calls through availability checks, presets, validation and middleware.
//
// All methods are safe for concurrent use. Registration is copy-on-write,
// so calls never wait for it: a call sees the registry as it was when the
// call started.
type Toolkit struct {
	state    GroupState
	log      *slog.Logger
	metaTmpl *template.Template
	// maxResult is Options.MaxResultBytes with its default; negative is
	// no bound.
	maxResult int
	onRefused func(ctx context.Context, call ToolCall, r *Response)

	mu       sync.Mutex // serialises writers of reg
	reg      atomic.Pointer[registry]
	watchers map[int]func()
	nextW    int
	changed  bool // a commit under mu the watchers have not heard of
}

// registry is an immutable snapshot.
type registry struct {
	groups     []Group // non-basic, in order
	order      []*entry
	byName     map[string]*entry
	middleware []Middleware
	meta       *entry // nil when there are no groups
}

// entry is a registered tool with everything the hot path needs
// precomputed.
type entry struct {
	tool      *Tool
	schema    map[string]any // effective: presets removed, extensions added
	validator *jsonschema.Resolved
	costly    *schemagraph.Graph // nil unless an input's cost is counted before validating it
	quick     *quickSchema       // nil unless the schema is of the simple kind
	handler   Handler            // middleware chain included
	extension *extension
}

type extension struct {
	properties map[string]any
	required   []string
	defs       map[string]any // $defs to merge into the tool's
}

// New returns an empty Toolkit.
func New(opts *Options) *Toolkit {
	if opts == nil {
		opts = &Options{}
	}
	tk := &Toolkit{state: opts.State, log: opts.Logger, watchers: map[int]func(){}, maxResult: opts.MaxResultBytes, onRefused: opts.OnRefused}
	if tk.maxResult == 0 {
		tk.maxResult = DefaultMaxResultBytes
	}
	if tk.state == nil {
		tk.state = NewMemoryState()
	}
	if tk.log == nil {
		tk.log = slog.Default()
	}
	src := opts.MetaResponseTemplate
	if src == "" {
		src = DefaultMetaResponseTemplate
	}
	tk.metaTmpl = template.Must(template.New("reset_tools").Parse(src))
	tk.reg.Store(&registry{byName: map[string]*entry{}})
	return tk
}

// ParseMetaTemplate checks a reset_tools response template before it is
// given to New.
func ParseMetaTemplate(src string) error {
	_, err := template.New("reset_tools").Parse(src)
	return err
}

// State returns the toolkit's GroupState.
func (tk *Toolkit) State() GroupState { return tk.state }

// Option adjusts a registration. Options validate their arguments and
// return errors wrapping ErrInvalidOption.
type Option func(*registration) error

type registration struct {
	tool     *Tool
	conflict Conflict
}

// InGroup puts the tool in a group, which must exist.
func InGroup(group string) Option {
	return func(r *registration) error {
		if group == "" {
			return fmt.Errorf("%w: empty group name", ErrInvalidOption)
		}
		if len(group) > MaxNameLen {
			return fmt.Errorf("%w: group name %.64q…: %d bytes, over the %d a group name may be", ErrInvalidOption, group, len(group), MaxNameLen)
		}
		r.tool.group = group
		return nil
	}
}

// WithSchemaOrder gives a Raw tool's schema the order of its keys
// (toolkit/order.go), for one written elsewhere (an MCP server's).
func WithSchemaOrder(order []KeyOrder) Option {
	return func(r *registration) error {
		r.tool.order = order
		return nil
	}
}

// ReadOnly marks the tool read-only (it changes nothing). It also implies
// NoSideEffects unless an idempotency level was set.
func ReadOnly() Option {
	return func(r *registration) error {
		r.tool.readOnly = true
		if r.tool.idempotency == IdempotencyUnknown {
			r.tool.idempotency = NoSideEffects
		}
		return nil
	}
}

// Durable sends the tool's calls over a fleet's durable path by default:
// they wait in a JetStream work queue until a worker with room takes them,
// and a call whose worker is lost is delivered again when the tool is
// idempotent or read-only. In process it changes nothing.
func Durable() Option {
	return func(r *registration) error { r.tool.durable = true; return nil }
}

// ListedWith makes the tool listed (Catalog.Schemas) only while one of
// the groups that groups returns, read again for every listing, is basic
// or active for the session: AgentScope lists its skill viewer only while
// a skill of basic or of an active group exists, and package skill's
// Install registers the viewer so. Calls are not affected: a call of the
// tool runs it, listed or not.
func ListedWith(groups func() []string) Option {
	return func(r *registration) error {
		if groups == nil {
			return fmt.Errorf("%w: ListedWith needs a function", ErrInvalidOption)
		}
		r.tool.listedWith = groups
		return nil
	}
}

// SessionBound says the tool keeps state on the machine that runs it
// between a session's calls (files it writes, a process, a stateful MCP
// client). A fleet sends a session's calls of session-bound tools to one
// worker (session affinity); in process it changes nothing.
func SessionBound() Option {
	return func(r *registration) error { r.tool.sessionBound = true; return nil }
}

// WithKind says what sort of tool it is (KindShell, KindFileRead, …), for
// policies that treat sorts differently. Only the code that builds a tool
// should set it: a permission engine trusts it.
func WithKind(kind string) Option {
	return func(r *registration) error {
		switch kind {
		case KindShell, KindPython, KindFileRead, KindFileWrite, KindSkill, KindMCP:
		default:
			return fmt.Errorf("%w: unknown tool kind %q", ErrInvalidOption, kind)
		}
		r.tool.kind = kind
		return nil
	}
}

// WithIdempotency declares what repeating a call does.
func WithIdempotency(level Idempotency) Option {
	return func(r *registration) error {
		if level < IdempotencyUnknown || level > Idempotent {
			return fmt.Errorf("%w: idempotency level %d", ErrInvalidOption, level)
		}
		r.tool.idempotency = level
		return nil
	}
}

// ConcurrencyUnsafe marks a tool that must not run concurrently with other
// calls (clients may use the flag to serialise calls).
func ConcurrencyUnsafe() Option {
	return func(r *registration) error { r.tool.concurrencyUnsafe = true; return nil }
}

// WithPresets sets arguments that are hidden from the schema and always
// win over the model's input. Each key must be a property of the tool's
// input schema and each value one that property's schema takes (Add
// fails otherwise, without showing the value), and presets must not be
// empty (ErrInvalidOption).
func WithPresets(presets map[string]any) Option {
	return func(r *registration) error {
		if len(presets) == 0 {
			return fmt.Errorf("%w: empty presets", ErrInvalidOption)
		}
		r.tool.presets = maps.Clone(presets)
		r.tool.presetsID = presetsIDs.Add(1)
		return nil
	}
}

// presetsIDs numbers the presets WithPresets gives (Tool.PresetsID).
var presetsIDs atomic.Uint64

// WithMiddleware adds middleware around this tool only (inside the
// toolkit-level middleware; first = outermost).
func WithMiddleware(mws ...Middleware) Option {
	return func(r *registration) error {
		if slices.ContainsFunc(mws, func(m Middleware) bool { return m == nil }) {
			return fmt.Errorf("%w: nil middleware", ErrInvalidOption)
		}
		r.tool.middleware = append(slices.Clone(r.tool.middleware), mws...)
		return nil
	}
}

// OnConflict chooses what happens when the name is taken.
func OnConflict(c Conflict) Option {
	return func(r *registration) error {
		if c < ConflictError || c > ConflictRename {
			return fmt.Errorf("%w: conflict strategy %d", ErrInvalidOption, c)
		}
		r.conflict = c
		return nil
	}
}

// Describe returns a copy of t described further by opts, as Add would
// register it; for code that needs a described Tool outside a toolkit.
// OnConflict has no effect here. The copy is shallow: its InputSchema is
// t's map.
func Describe(t *Tool, opts ...Option) (*Tool, error) {
	r, err := describe(t, opts)
	if err != nil {
		return nil, err
	}
	return r.tool, nil
}

func describe(t *Tool, opts []Option) (registration, error) {
	if t == nil {
		return registration{}, errors.New("toolkit: nil tool")
	}
	if t.err != nil {
		return registration{}, toolError(t.Name, t.err)
	}
	cp := *t
	cp.run = nil // t may be a registered tool (Get): its Handler is what it describes
	r := registration{tool: &cp}
	for _, o := range opts {
		if o == nil {
			return registration{}, toolError(t.Name, fmt.Errorf("%w: nil option", ErrInvalidOption))
		}
		if err := o(&r); err != nil {
			return registration{}, toolError(t.Name, err)
		}
	}
	cp.group = cp.Group()
	return r, nil
}

// toolError is err, of registering the tool named name, said of it:
// "toolkit: tool "x": " and err's words, without their own "toolkit: "
// (an option's error, ErrInvalidOption's, or Func's), so that the
// package names itself once. errors.Is and errors.As see err.
func toolError(name string, err error) error {
	return &namedToolError{name: name, err: err}
}

type namedToolError struct {
	name string
	err  error
}

func (e *namedToolError) Error() string {
	return fmt.Sprintf("toolkit: tool %q: %s", e.name, strings.TrimPrefix(e.err.Error(), "toolkit: "))
}

func (e *namedToolError) Unwrap() error { return e.err }

// Add registers a tool (a copy of t, described by opts). The copy is
// shallow: the registered Tool's InputSchema (what Get and Call.Tool
// show) is t's map, so t's schema must not change after Add; what is
// listed and validated is a deep copy taken by Add. It fails for an
// invalid name (or one over MaxNameLen bytes), a bad schema, a missing handler, an unknown group, a
// preset that is not a property, or a name that is taken (unless
// OnConflict says otherwise). "reset_tools" is reserved.
//
// Each Add copies the registry: to register many tools, use AddAll.
func (tk *Toolkit) Add(t *Tool, opts ...Option) error {
	r, err := prepare(t, opts)
	if err != nil {
		return err
	}
	defer tk.lock()()
	b := &batch{next: tk.reg.Load().clone()}
	done, err := tk.place(b, r)
	if err != nil {
		return err
	}
	if done != nil {
		done()
	}
	if b.changed {
		tk.commit(b.next)
	}
	return nil
}

// Registration is one tool of a batch AddAll registers: the tool and the
// options describing it, as Add takes them.
type Registration struct {
	Tool    *Tool
	Options []Option
}

// AddAll registers a batch of tools as one change: each as Add would
// register it, one after the other in order, so a registration's name is
// judged against the toolkit and the batch's earlier registrations (a
// later OnConflict(ConflictOverride) replaces an earlier tool of the
// batch in its position, ConflictRename renames away from it,
// ConflictSkip keeps it and logs, the default fails). The registry is
// copied once and OnChange functions run once, where n calls of Add copy
// it n times: registering n tools costs O(n), not O(n²).
//
// It is atomic: when a registration fails, none of the batch is made
// (readers never see part of it) and the error is a *BatchError naming
// every registration that failed, by its index in regs, each judged as if
// the failed ones before it were left out; so a caller that wants the
// others registered drops those and calls AddAll again with the rest. A
// registration ConflictSkip skips is not a failure. The log lines of
// renames and skips are written only when the batch is registered. An
// empty batch changes nothing.
func (tk *Toolkit) AddAll(regs ...Registration) error {
	prepared := make([]registration, len(regs))
	failed := map[int]error{}
	for i, reg := range regs {
		r, err := prepare(reg.Tool, reg.Options)
		if err != nil {
			failed[i] = err
			continue
		}
		prepared[i] = r
	}
	defer tk.lock()()
	b := &batch{next: tk.reg.Load().clone()}
	var logs []func()
	for i, r := range prepared {
		if failed[i] != nil {
			continue
		}
		done, err := tk.place(b, r)
		if err != nil {
			failed[i] = err
			continue
		}
		if done != nil {
			logs = append(logs, done)
		}
	}
	if len(failed) > 0 {
		return &BatchError{Failed: failed}
	}
	for _, l := range logs {
		l()
	}
	if b.changed {
		tk.commit(b.next)
	}
	return nil
}

// BatchError is the error of an AddAll that registered nothing: why each
// registration that failed did.
type BatchError struct {
	// Failed holds each failed registration's error by its index in the
	// batch.
	Failed map[int]error
}

func (e *BatchError) Error() string {
	idx := slices.Sorted(maps.Keys(e.Failed))
	if len(idx) == 0 {
		return "toolkit: batch refused"
	}
	msg := fmt.Sprintf("toolkit: batch refused, nothing registered: registration %d: %v", idx[0], e.Failed[idx[0]])
	if len(idx) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(idx)-1)
	}
	return msg
}

// Unwrap returns the registrations' errors in the order of the batch, for
// errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, i := range slices.Sorted(maps.Keys(e.Failed)) {
		out = append(out, e.Failed[i])
	}
	return out
}

// prepare describes t by opts and checks what does not depend on the
// registry.
func prepare(t *Tool, opts []Option) (registration, error) {
	r, err := describe(t, opts)
	if err != nil {
		return registration{}, err
	}
	cp := r.tool
	if !ValidName(cp.Name) {
		return registration{}, fmt.Errorf("toolkit: invalid tool name %.128q: must match [A-Za-z0-9_-]+ (one NATS subject token)", cp.Name)
	}
	if len(cp.Name) > MaxNameLen {
		return registration{}, fmt.Errorf("toolkit: invalid tool name %.64q…: %d bytes, over the %d a tool name may be", cp.Name, len(cp.Name), MaxNameLen)
	}
	if cp.Name == MetaToolName {
		return registration{}, fmt.Errorf("toolkit: tool name %q is reserved for the meta tool", cp.Name)
	}
	if cp.Handler == nil {
		return registration{}, fmt.Errorf("toolkit: tool %q has no handler", cp.Name)
	}
	if err := CheckInputSchema(cp.InputSchema); err != nil {
		return registration{}, toolError(cp.Name, err)
	}
	cp.run, cp.Handler = cp.Handler, marked(cp.Handler)
	return r, nil
}

// batch is a copy of the registry being changed by one Add or AddAll,
// under tk.mu.
type batch struct {
	next    *registry
	changed bool
	// pos is the position of each tool in next.order, made when a tool is
	// first replaced (positions do not move: tools are only appended and
	// replaced).
	pos map[string]int
}

// place puts a prepared registration in b.next, changing nothing when it
// fails; done, when not nil, logs what it did (a rename, a skip), to run
// once the change is certain.
func (tk *Toolkit) place(b *batch, r registration) (done func(), _ error) {
	cp, next := r.tool, b.next
	if cp.group != BasicGroup && !slices.ContainsFunc(next.groups, func(g Group) bool { return g.Name == cp.group }) {
		return nil, fmt.Errorf("toolkit: tool %q: group %.128q not found", cp.Name, cp.group)
	}
	e, err := newEntry(cp, nil, next.middleware)
	if err != nil {
		return nil, toolError(cp.Name, err)
	}
	if _, ok := next.byName[cp.Name]; ok && r.conflict == ConflictRename {
		renamed, err := freeName(next, cp.Name)
		if err != nil {
			return nil, err
		}
		if cp.originalName == "" {
			cp.originalName = cp.Name
		}
		name := cp.Name
		done = func() {
			tk.log.Info("toolkit: tool name taken; registered under a new name", "tool", name, "as", renamed)
		}
		cp.Name = renamed
		if e, err = newEntry(cp, nil, next.middleware); err != nil {
			return nil, toolError(cp.Name, err)
		}
	}
	if _, ok := next.byName[cp.Name]; ok {
		switch r.conflict {
		case ConflictSkip:
			name := cp.Name
			return func() { tk.log.Warn("toolkit: tool already registered, skipping", "tool", name) }, nil
		case ConflictOverride:
			next.order[b.position(cp.Name)] = e
			next.byName[cp.Name] = e
		default:
			return nil, fmt.Errorf("toolkit: a tool named %q is already registered", cp.Name)
		}
	} else {
		next.order = append(next.order, e)
		next.byName[cp.Name] = e
		if b.pos != nil {
			b.pos[cp.Name] = len(next.order) - 1
		}
	}
	b.changed = true
	return done, nil
}

// position is the index of the named tool in b.next.order.
func (b *batch) position(name string) int {
	if b.pos == nil {
		b.pos = make(map[string]int, len(b.next.order))
		for i, e := range b.next.order {
			b.pos[e.tool.Name] = i
		}
	}
	return b.pos[name]
}

// renameAlphabet is shortuuid's: digits and letters without the ones
// that look alike (0, 1, I, O, l).
const renameAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// freeName finds name_XXXXX not taken in reg, in up to 100 tries. A name
// too long to take the suffix within MaxNameLen is cut first, so the new
// name is one a tool may have (ValidToolName).
func freeName(reg *registry, name string) (string, error) {
	name = name[:min(len(name), MaxNameLen-len("_XXXXX"))]
	for range 100 {
		var b [5]byte
		for i := range b {
			b[i] = renameAlphabet[rand.IntN(len(renameAlphabet))]
		}
		n := name + "_" + string(b[:])
		if _, taken := reg.byName[n]; !taken && n != MetaToolName {
			return n, nil
		}
	}
	return "", fmt.Errorf("toolkit: no free name for %q after 100 tries", name)
}

// Remove unregisters tools by name; unknown names are ignored. The
// registry is copied once however many names are given.
func (tk *Toolkit) Remove(names ...string) {
	defer tk.lock()()
	next := tk.reg.Load().clone()
	gone := map[*entry]bool{}
	for _, n := range names {
		if e, ok := next.byName[n]; ok {
			delete(next.byName, n)
			gone[e] = true
		}
	}
	if len(gone) > 0 {
		next.order = slices.DeleteFunc(next.order, func(x *entry) bool { return gone[x] })
		tk.commit(next)
	}
}

// Clear removes every tool and group. Middleware stays.
func (tk *Toolkit) Clear() {
	defer tk.lock()()
	old := tk.reg.Load()
	tk.commit(&registry{byName: map[string]*entry{}, middleware: old.middleware})
}

// Get returns a registered tool (the meta tool included). The *Tool must
// be treated as read-only.
func (tk *Toolkit) Get(name string) (*Tool, bool) {
	e := tk.reg.Load().lookup(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

// Tools returns every registered tool in registration order, whatever its
// group's activation (the meta tool is not included).
func (tk *Toolkit) Tools() []*Tool {
	reg := tk.reg.Load()
	out := make([]*Tool, len(reg.order))
	for i, e := range reg.order {
		out[i] = e.tool
	}
	return out
}

// Groups returns the non-basic groups in registration order.
func (tk *Toolkit) Groups() []Group { return slices.Clone(tk.reg.Load().groups) }

// AddGroup registers a group. The name must be a valid token of at most
// MaxNameLen bytes, not "basic" and not taken; the description is
// required.
func (tk *Toolkit) AddGroup(g Group) error {
	switch {
	case g.Name == BasicGroup:
		return fmt.Errorf("toolkit: group %q is implicit and always active", BasicGroup)
	case !ValidName(g.Name):
		return fmt.Errorf("toolkit: invalid group name %.128q: must match [A-Za-z0-9_-]+", g.Name)
	case len(g.Name) > MaxNameLen:
		return fmt.Errorf("toolkit: invalid group name %.64q…: %d bytes, over the %d a group name may be", g.Name, len(g.Name), MaxNameLen)
	case g.Description == "":
		return fmt.Errorf("toolkit: group %q needs a description", g.Name)
	}
	defer tk.lock()()
	next := tk.reg.Load().clone()
	if slices.ContainsFunc(next.groups, func(x Group) bool { return x.Name == g.Name }) {
		return fmt.Errorf("toolkit: group %q already exists", g.Name)
	}
	next.groups = append(next.groups, g)
	tk.commit(next)
	return nil
}

// RemoveGroup removes a group and every tool in it.
func (tk *Toolkit) RemoveGroup(name string) error {
	if name == BasicGroup {
		return fmt.Errorf("toolkit: group %q cannot be removed", BasicGroup)
	}
	defer tk.lock()()
	next := tk.reg.Load().clone()
	i := slices.IndexFunc(next.groups, func(g Group) bool { return g.Name == name })
	if i < 0 {
		return fmt.Errorf("toolkit: group %q not found", unheldName(name))
	}
	next.groups = slices.Delete(next.groups, i, i+1)
	next.order = slices.DeleteFunc(next.order, func(e *entry) bool {
		if e.tool.group == name {
			delete(next.byName, e.tool.Name)
			return true
		}
		return false
	})
	tk.commit(next)
	return nil
}

// Use appends toolkit-level middleware, outside every tool's own
// middleware. The first registered is the outermost.
func (tk *Toolkit) Use(mws ...Middleware) {
	if slices.ContainsFunc(mws, func(m Middleware) bool { return m == nil }) {
		panic("toolkit: Use with a nil middleware")
	}
	defer tk.lock()()
	next := tk.reg.Load().clone()
	next.middleware = append(slices.Clone(next.middleware), mws...)
	for i, e := range next.order {
		ne, err := newEntry(e.tool, e.extension, next.middleware)
		if err != nil { // cannot happen: the schema was accepted before
			panic(err)
		}
		next.order[i] = ne
		next.byName[e.tool.Name] = ne
	}
	tk.commit(next)
}

// ExtendSchema is Extend with the extension given as an object schema
// (AgentScope 1.x set_extended_model, whose pydantic model's schema this
// is): its properties are added as Extend adds them, its required fields
// become required, and its $defs are merged into the tool's, so its
// properties may refer to them ("$ref": "#/$defs/Name"). A $defs key the
// tool's schema already has must define the same schema (titles aside),
// as when both come from one model, or ExtendSchema fails. A nil schema
// removes the extension.
func (tk *Toolkit) ExtendSchema(name string, schema map[string]any) error {
	if schema == nil {
		return tk.Extend(name, nil)
	}
	if err := CheckInputSchema(schema); err != nil {
		return fmt.Errorf("toolkit: extending %q: %w", name, err)
	}
	props, _ := schema["properties"].(map[string]any)
	var required []string
	switch req := schema["required"].(type) {
	case nil:
	case []string:
		required = req
	case []any:
		for _, r := range req {
			s, ok := r.(string)
			if !ok {
				return fmt.Errorf("toolkit: extending %q: \"required\" holds %v, not a property name", name, r)
			}
			required = append(required, s)
		}
	default:
		return fmt.Errorf("toolkit: extending %q: \"required\" must be a list of property names", name)
	}
	var defs map[string]any
	if d, ok := schema["$defs"]; ok {
		if defs, ok = d.(map[string]any); !ok {
			return fmt.Errorf("toolkit: extending %q: \"$defs\" must be an object", name)
		}
	}
	if props == nil {
		props = map[string]any{} // an extension of definitions alone is still one
	}
	return tk.extend(name, props, required, defs)
}

// Extend adds properties to a tool's schema at runtime (for example a
// "thinking" string the model fills in). The fields reach raw handlers and
// middleware in call.Input, and every handler, typed tools included, in
// Extended(ctx). A property that exists in the tool's own schema is an error;
// calling Extend again replaces the previous extension, and nil removes it.
// The properties' titles are stripped, as the tool's own are.
func (tk *Toolkit) Extend(name string, properties map[string]any, required ...string) error {
	return tk.extend(name, properties, required, nil)
}

func (tk *Toolkit) extend(name string, properties map[string]any, required []string, defs map[string]any) error {
	defer tk.lock()()
	next := tk.reg.Load().clone()
	e, ok := next.byName[name]
	if !ok {
		return fmt.Errorf("toolkit: tool %q not found", name)
	}
	var ext *extension
	if properties != nil {
		for _, req := range required {
			if _, ok := properties[req]; !ok {
				return fmt.Errorf("toolkit: required field %q is not among the extension's properties", req)
			}
		}
		// Placed as the tool's own properties are, and copied with them.
		placed := map[string]any{"type": "object", "properties": properties}
		if defs != nil {
			placed["$defs"] = defs
		}
		if err := CheckInputSchema(placed); err != nil {
			return fmt.Errorf("toolkit: extending %q: %w", name, err)
		}
		ext = &extension{properties: maps.Clone(properties), required: slices.Clone(required), defs: maps.Clone(defs)}
	}
	ne, err := newEntry(e.tool, ext, next.middleware)
	if err != nil {
		return fmt.Errorf("toolkit: extending %q: %w", name, err)
	}
	next.order[slices.Index(next.order, e)] = ne
	next.byName[name] = ne
	tk.commit(next)
	return nil
}

// OnChange registers fn to run whenever tools or groups are added or
// removed. It runs on the goroutine that made the change, after the
// change and outside the toolkit's lock, so it may read the toolkit (and
// should read its current state: calls for concurrent changes may run
// concurrently). It returns a function that unregisters fn.
func (tk *Toolkit) OnChange(fn func()) (stop func()) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	id := tk.nextW
	tk.nextW++
	tk.watchers[id] = fn
	return func() {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		delete(tk.watchers, id)
	}
}

// lock takes the writers' lock. The function it returns releases it and
// then, outside the lock, runs the OnChange functions when a change was
// committed meanwhile.
func (tk *Toolkit) lock() (unlock func()) {
	tk.mu.Lock()
	return func() {
		var fns []func()
		if tk.changed {
			tk.changed = false
			fns = slices.Collect(maps.Values(tk.watchers))
		}
		tk.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}
}

// commit publishes a new snapshot; tk.mu is held (see lock).
func (tk *Toolkit) commit(next *registry) {
	next.meta = nil
	if len(next.groups) > 0 {
		next.meta = tk.metaEntry(next)
	}
	tk.reg.Store(next)
	tk.changed = true
}

func (r *registry) clone() *registry {
	return &registry{
		groups:     slices.Clone(r.groups),
		order:      slices.Clone(r.order),
		byName:     maps.Clone(r.byName),
		middleware: r.middleware,
	}
}

func (r *registry) lookup(name string) *entry {
	if name == MetaToolName && r.meta != nil {
		return r.meta
	}
	return r.byName[name]
}

// newEntry computes the effective schema, its validator and the handler
// chain.
func newEntry(t *Tool, ext *extension, mws []Middleware) (*entry, error) {
	schema := cloneJSON(t.InputSchema).(map[string]any)
	StripTitles(schema)
	props, _ := schema["properties"].(map[string]any)
	if err := checkPresets(schema, t.presets); err != nil {
		return nil, err
	}
	if err := checkDecodes(t); err != nil {
		return nil, err
	}
	for k := range t.presets {
		delete(props, k)
		if req, ok := schema["required"].([]any); ok {
			schema["required"] = slices.DeleteFunc(req, func(v any) bool { return v == k })
		}
	}
	if ext != nil {
		own, _ := t.InputSchema["properties"].(map[string]any)
		for k, v := range ext.properties {
			_, taken := props[k]
			if _, preset := own[k]; taken || preset {
				return nil, fmt.Errorf("the field %q already exists in the schema of %q; use a different name", k, t.Name)
			}
			v = cloneJSON(v)
			if sub, ok := v.(map[string]any); ok {
				StripTitles(sub) // as the tool's own schema's are
			}
			props[k] = v
		}
		if len(ext.defs) > 0 {
			// As 1.x merges an extended model's $defs: a name the tool
			// has must define the same schema (both from one model).
			have, ok := schema["$defs"].(map[string]any)
			if _, set := schema["$defs"]; set && !ok {
				return nil, fmt.Errorf("the schema of %q has a \"$defs\" that is not an object", t.Name)
			}
			if have == nil {
				have = map[string]any{}
				schema["$defs"] = have
			}
			for k, v := range ext.defs {
				v = cloneJSON(v)
				if sub, ok := v.(map[string]any); ok {
					StripTitles(sub)
				}
				if old, ok := have[k]; ok {
					if !sameJSON(old, v) {
						return nil, fmt.Errorf("the $defs key %q conflicts with the definition in the schema of %q", k, t.Name)
					}
					continue
				}
				have[k] = v
			}
		}
		if len(ext.required) > 0 {
			req, _ := schema["required"].([]any)
			for _, k := range ext.required {
				req = append(req, k)
			}
			schema["required"] = req
		}
	}
	if req, ok := schema["required"].([]any); ok && len(req) == 0 {
		delete(schema, "required")
	}
	v, costly, err := compileSchema(schema)
	if err != nil {
		return nil, err
	}
	h := Chain(Chain(unlessEnded(withPresets(t.run, t.presets)), t.middleware...), mws...)
	return &entry{tool: t, schema: schema, validator: v, costly: costly, quick: newQuickSchema(schema), handler: h, extension: ext}, nil
}

// checkPresets reports a preset that is not a property of schema, or
// whose value the property's schema refuses: merged after validation, it
// would fail every call of the tool as the model's invalid input (or
// reach a raw tool unchecked), so it is refused at Add. The error never
// shows the value: presets are often secrets.
func checkPresets(schema map[string]any, presets map[string]any) error {
	if len(presets) == 0 {
		return nil
	}
	props, _ := schema["properties"].(map[string]any)
	for k := range presets {
		if _, ok := props[k]; !ok {
			return fmt.Errorf("preset %q is not a property of the input schema", k)
		}
	}
	// The properties alone, with what their references may name: the
	// root's other keywords (required, additionalProperties, allOf…) are
	// about the whole input, which the presets are not.
	only := map[string]any{"type": "object", "properties": props}
	for _, k := range []string{"$schema", "$id", "$defs", "definitions"} {
		if v, ok := schema[k]; ok {
			only[k] = v
		}
	}
	v, _, err := compileSchema(only)
	if err != nil {
		return err
	}
	for k, val := range presets {
		b, err := json.Marshal(val)
		if err != nil {
			return fmt.Errorf("preset %q is not a JSON value: %T", k, val)
		}
		var decoded any
		if err := json.Unmarshal(b, &decoded); err != nil {
			return fmt.Errorf("preset %q is not a JSON value: %T", k, val)
		}
		if MayHoldBigIntegers(b) {
			decoded = decodeExact(b)
		}
		if err := v.Validate(map[string]any{k: decoded}); err != nil {
			return fmt.Errorf("preset %q does not match its property's schema (its value is not shown: presets are often secrets)", k)
		}
	}
	return nil
}

// checkDecodes reports a preset of a typed tool that its property's
// schema takes but the tool's decoder refuses (a time.Time field given a
// date in another layout): merged after validation, it would fail every
// call as the model's invalid input, encoding/json's message quoting the
// value. Like checkPresets, the error never shows it.
func checkDecodes(t *Tool) error {
	if t.decodes == nil {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(t.presets)) {
		if err := t.decodes(map[string]any{k: t.presets[k]}); err != nil {
			return fmt.Errorf("preset %q is refused by the tool's decoder of %s's input (its value is not shown: presets are often secrets)", k, t.Name)
		}
	}
	return nil
}

// sameJSON reports whether a and b, JSON-shaped, write the same JSON
// ([]string and []any, int and float64 alike; maps' keys are sorted).
func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// unlessEnded runs the tool only while its call's context lives: a call
// cancelled, or past its deadline, before its tool starts (it waited for
// a slot, say) ends so without running it, its caller having been
// answered; the middleware around it sees the call end as any other.
// It tells the call's dispatch which it did (NotRunWriter).
//
// A chain's rest left running by a middleware that returned does not
// enter the tool once Dispatch has answered the call: that answer said
// whether the tool ran. It returns ErrStopped then, without running it.
func unlessEnded(h Handler) Handler {
	return func(ctx context.Context, call *Call, w Writer) error {
		d := dispatchOf(ctx, call)
		if ctx.Err() != nil {
			if d != nil {
				d.skip()
			}
			return ContextError(ctx)
		}
		if d != nil && !d.enter() {
			return ErrStopped
		}
		return h(ctx, call, w)
	}
}

// marked is a registered tool's Handler (Tool.Handler): h, run by a
// middleware itself instead of by the chain's rest (which runs h
// unmarked), telling the call's dispatch that the tool was entered as
// unlessEnded does, and not running for a call Dispatch has answered.
func marked(h Handler) Handler {
	return func(ctx context.Context, call *Call, w Writer) error {
		if call != nil {
			if d := dispatchOf(ctx, call); d != nil && !d.enter() {
				return ErrStopped
			}
		}
		return h(ctx, call, w)
	}
}

// withPresets merges the presets into the input right before the tool
// runs, innermost, so that middleware, logs, traces and error texts never
// see their values (they are often secrets). The call's input is replaced
// by a copy; the caller's map is never written.
func withPresets(h Handler, presets map[string]any) Handler {
	if len(presets) == 0 {
		return h
	}
	return func(ctx context.Context, call *Call, w Writer) error {
		input := make(map[string]any, len(call.Input)+len(presets))
		maps.Copy(input, call.Input)
		maps.Copy(input, presets)
		c := *call
		c.Input = input
		return h(ctx, &c, w)
	}
}

// MaxSchemaDepth bounds the nesting of objects and arrays in an input
// schema: the bus's decoders refuse bodies nested deeper than 64 levels,
// and a schema travels a few levels down in announcements and listings,
// so a deeper one would make its worker's whole announcement unreadable.
const MaxSchemaDepth = 48

// MaxSchemaValues bounds the values of an input schema written out as
// JSON, as it is copied, listed and announced: a schema that holds one
// map in many places is small in memory and may be huge written out.
const MaxSchemaValues = 1_000_000

// CheckInputSchema reports whether s can be a tool's input schema: a JSON
// object schema ("type": "object") with a "properties" object, nested at
// most MaxSchemaDepth levels deep, holding at most MaxSchemaValues values
// written out, and not holding itself (a map or slice among its own
// contents).
func CheckInputSchema(s map[string]any) error {
	if s == nil {
		return errors.New("no input schema")
	}
	w := shapeWalk{budget: MaxSchemaValues}
	if err := w.walk(s, 0); err != nil {
		return fmt.Errorf("invalid input schema: %w", err)
	}
	if s["type"] != "object" {
		return fmt.Errorf(`invalid input schema: "type" must be "object", got %v`, s["type"])
	}
	if _, ok := s["properties"].(map[string]any); !ok {
		return errors.New(`invalid input schema: "properties" must be an object`)
	}
	return nil
}

// shapeWalk walks a schema as cloneJSON copies it, bounding its depth and
// its values written out, and finding a map or slice that holds itself.
type shapeWalk struct {
	budget int
	path   []container // the maps and slices the walk is inside
}

// container names a map (n -1) or a slice (its first element and length).
type container struct {
	p unsafe.Pointer
	n int
}

func (w *shapeWalk) walk(v any, depth int) error {
	if w.budget--; w.budget < 0 {
		return fmt.Errorf("more than %d values written out", MaxSchemaValues)
	}
	var c container
	switch x := v.(type) {
	case map[string]any:
		c = container{reflect.ValueOf(x).UnsafePointer(), -1}
	case []any:
		c = container{unsafe.Pointer(unsafe.SliceData(x)), len(x)}
	case []map[string]any:
		c = container{unsafe.Pointer(unsafe.SliceData(x)), len(x)}
	default:
		return nil
	}
	if depth >= MaxSchemaDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxSchemaDepth)
	}
	if c.p != nil && c.n != 0 && slices.Contains(w.path, c) {
		return errors.New("it contains itself")
	}
	w.path = append(w.path, c)
	defer func() { w.path = w.path[:len(w.path)-1] }()
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if err := w.walk(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := w.walk(e, depth+1); err != nil {
				return err
			}
		}
	case []map[string]any:
		for _, e := range x {
			if err := w.walk(e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// FunctionSchema is a tool's schema in the OpenAI function-calling shape:
// {"type":"function","function":{"name","description","parameters"}}.
type FunctionSchema struct {
	Type     string   `json:"type" msgpack:"type"`
	Function Function `json:"function" msgpack:"function"`
}

// Function is the body of a FunctionSchema.
type Function struct {
	Name        string         `json:"name" msgpack:"name"`
	Description string         `json:"description" msgpack:"description"`
	Parameters  map[string]any `json:"parameters" msgpack:"parameters"`
	// Order is the declaration order of Parameters' keys (order.go): the
	// JSON encoding (MarshalJSON) follows it and leaves it out.
	Order []KeyOrder `json:"order,omitempty" msgpack:"order,omitempty"`
}

// Schemas returns the schemas the model may see when the given groups are
// active: the meta tool first (when non-basic groups exist), then the basic
// group's tools and then each active group's, in the groups' order, each
// group's tools in registration order (Catalog.Schemas). Unknown group
// names are ignored.
func (tk *Toolkit) Schemas(active []string) []FunctionSchema {
	c := tk.Catalog()
	return c.Schemas(active)
}

// Catalog returns what the toolkit offers: its groups and its tools'
// schemas, in registration order.
func (tk *Toolkit) Catalog() Catalog {
	reg := tk.reg.Load()
	c := Catalog{Groups: slices.Clone(reg.groups), Tools: make([]CatalogTool, len(reg.order))}
	for i, e := range reg.order {
		c.Tools[i] = CatalogTool{Group: e.tool.group, Schema: FunctionSchema{Type: "function", Function: Function{
			Name: e.tool.Name, Description: e.tool.Description, Parameters: e.schema, Order: e.tool.order}}}
		if e.tool.listedWith != nil {
			c.Tools[i].Conditional, c.Tools[i].ListedWith = true, slices.Clone(e.tool.listedWith())
		}
	}
	return c
}

// SessionSchemas returns Schemas for the session's current activation.
func (tk *Toolkit) SessionSchemas(ctx context.Context, session string, minRevision uint64) ([]FunctionSchema, error) {
	active, _, err := tk.ActiveGroups(ctx, session, minRevision)
	if err != nil {
		return nil, err
	}
	return tk.Schemas(active), nil
}

// ActiveGroups returns the session's active groups (its stored state, or
// the groups marked Active by default) and the state revision.
func (tk *Toolkit) ActiveGroups(ctx context.Context, session string, minRevision uint64) ([]string, uint64, error) {
	return LoadActive(ctx, tk.state, tk.reg.Load().groups, session, minRevision)
}

// Schema returns one tool's function schema as the model sees it.
func (tk *Toolkit) Schema(name string) (FunctionSchema, bool) {
	reg := tk.reg.Load()
	if name == MetaToolName && reg.meta != nil {
		return MetaSchema(reg.groups, nil), true
	}
	e := reg.byName[name]
	if e == nil {
		return FunctionSchema{}, false
	}
	return e.functionSchema(), true
}

func (e *entry) functionSchema() FunctionSchema {
	return FunctionSchema{Type: "function", Function: Function{
		Name: e.tool.Name, Description: e.tool.Description, Parameters: cloneJSON(e.schema).(map[string]any), Order: e.tool.order,
	}}
}

// cloneJSON deep-copies a JSON-shaped value (maps, slices, scalars).
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[k] = cloneJSON(v)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, v := range x {
			s[i] = cloneJSON(v)
		}
		return s
	case []string:
		s := make([]any, len(x))
		for i, v := range x {
			s[i] = v
		}
		return s
	case []map[string]any:
		s := make([]any, len(x))
		for i, v := range x {
			s[i] = cloneJSON(v)
		}
		return s
	default:
		return v
	}
}
