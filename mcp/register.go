package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// MaxListedTools bounds the tools one server may list, maxListPages the
// pages of its listing and MaxMessageBytes the JSON of the tools listed
// and the cursors of its pages: a
// server paging without end would otherwise fill the worker's memory
// until the connect timeout, then again.
const (
	MaxListedTools = 10_000
	maxListPages   = 1_000
)

// MaxServerToolBytes bounds the size of one server's registered tools
// as its worker announces them (announcedSize: each tool's entry of the
// announcement, name, description, input schema and the rest, as the
// announcer encodes a large one): its worker announces every tool to
// the fleet in one NATS message, which the NATS server refuses past its
// max_payload (1 MiB by default), and a worker whose announcement fails
// drops out of the fleet with all its tools, or does not start. A tool
// that does not fit in what is left is skipped with a warning.
const MaxServerToolBytes = 512 << 10

// emptyAnnouncement is the size of an announcement of no tools.
var emptyAnnouncement = sync.OnceValue(func() int {
	b, _ := wire.Msgpack.Marshal(&wire.Announcement{Tools: []wire.AnnouncedTool{}})
	return len(b)
})

// announcedSize is the bytes t adds to its worker's announcement, in
// msgpack (as the announcer sends one of more than a few tools: msgpack
// is not always the smaller, a number takes 9 bytes); a tool that cannot
// be encoded counts as too large.
func announcedSize(t wire.AnnouncedTool) int {
	b, err := wire.Msgpack.Marshal(&wire.Announcement{Tools: []wire.AnnouncedTool{t}})
	if err != nil {
		return math.MaxInt
	}
	return len(b) - emptyAnnouncement()
}

// overSchema reports whether the input schema a server listed (as the
// go-sdk decoded it) is sure to make its tool's announcedSize pass
// MaxServerToolBytes: it is at least leastSize, the skip the registration
// makes once the schema is converted, ordered and encoded found cheaply,
// with no allocation, before any of that (a million properties cost
// hundreds of MiB to convert, at each listing).
func overSchema(schema any) bool {
	m, ok := schema.(map[string]any)
	return ok && leastSize(m, MaxServerToolBytes) > MaxServerToolBytes
}

// leastSize is a lower bound of the bytes v takes in msgpack as an input
// schema is announced, or a number past limit once the bound passes it:
// every value takes a byte at least, a string or key its length more. A
// member named "title" is not counted anywhere, as inputSchema strips
// titles (toolkit.StripTitles, in schema positions only: the bound stays
// a lower one).
func leastSize(v any, limit int) int {
	switch v := v.(type) {
	case string:
		return 1 + len(v)
	case map[string]any:
		n := 1
		for k, e := range v {
			if k == "title" {
				continue
			}
			if n += 1 + len(k) + leastSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	case []any:
		n := 1
		for _, e := range v {
			if n += leastSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	}
	return 1
}

// listAll returns the server's tools (every page), unfiltered.
func (c *Client) listAll(ctx context.Context) ([]*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(withListing(ctx), c.cfg.connectTimeout())
	defer cancel()
	l := &toolListing{} // the go-sdk's cache of the listing (uncachedResults)
	ctx = context.WithValue(ctx, toolListingKey{}, l)
	err := c.withSession(ctx, true, func(cs *sdk.ClientSession) error {
		l.tools, l.merged = nil, false
		seen := map[string]bool{}
		params := &sdk.ListToolsParams{}
		size := 0
		for pages := 1; ; pages++ {
			res, err := cs.ListTools(ctx, params)
			if err != nil {
				return err
			}
			page := res.Tools
			if l.merged { // the last page, after the tools of the pages before
				if len(page) < len(l.tools) {
					return &serverFault{fmt.Errorf("MCP server %q: its tool list's last page lost the tools of the pages before", c.cfg.Name)}
				}
				page = page[len(l.tools):]
			}
			l.tools = append(l.tools, page...)
			b, _ := json.Marshal(page)           // at most one message's worth
			size += len(b) + len(res.NextCursor) // the cursors are kept (seen) and sent back
			switch {
			case len(l.tools) > MaxListedTools:
				return &serverFault{fmt.Errorf("MCP server %q lists more than %d tools", c.cfg.Name, MaxListedTools)}
			case size > MaxMessageBytes:
				return &serverFault{fmt.Errorf("MCP server %q lists more than %d MiB of tools", c.cfg.Name, MaxMessageBytes>>20)}
			case res.NextCursor == "":
				return nil
			case res.NextCursor == toolsKey:
				return &serverFault{fmt.Errorf("MCP server %q pages its tool list with a reserved cursor %q", c.cfg.Name, toolsKey)}
			case seen[res.NextCursor] || pages >= maxListPages:
				return &serverFault{fmt.Errorf("MCP server %q pages its tool list without end (%d pages)", c.cfg.Name, pages)}
			}
			seen[res.NextCursor] = true
			params.Cursor = res.NextCursor
		}
	})
	all, dups := firstOfEach(l.tools)
	c.orders.keep(all) // those of the tools listed (when it failed: of those it got)
	if err != nil {
		var ue *unreachableError
		if errors.As(err, &ue) || errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, &unreachableError{fmt.Errorf("listing the tools of MCP server %q: %w", c.cfg.Name, err)}
	}
	c.mu.Lock()
	warned := c.dupWarned
	c.dupWarned = strings.Join(dups, "\x00")
	c.mu.Unlock()
	if len(dups) > 0 && warned != strings.Join(dups, "\x00") {
		c.log.Warn("MCP server lists tools more than once under one name; the first listed of each is served", "tools", nameList(dups))
	}
	return all, nil
}

// firstOfEach returns tools without those under a name listed before
// them: a server listing two tools under one name has the first served,
// as MCP clients do, and nothing of the other (its description, schema,
// key order or annotations). dups are the names listed more than once.
func firstOfEach(tools []*sdk.Tool) (kept []*sdk.Tool, dups []string) {
	seen := make(map[string]bool, len(tools))
	kept = tools[:0:0]
	for _, t := range tools {
		if seen[t.Name] {
			if !slices.Contains(dups, t.Name) {
				dups = append(dups, t.Name)
			}
			continue
		}
		seen[t.Name] = true
		kept = append(kept, t)
	}
	return kept, dups
}

// ListTools returns the server's tools (every page; of a name listed
// twice, the first), filtered by enable_tools and disable_tools. An enable_tools name the server lacks is
// an error wrapping ErrUnknownTool.
func (c *Client) ListTools(ctx context.Context) ([]*sdk.Tool, error) {
	all, err := c.listAll(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := c.filter(all)
	if err != nil {
		return nil, err
	}
	return tools, nil
}

// filter applies enable_tools and disable_tools. When enable_tools names
// tools the server does not list, it returns the tools it would keep
// all the same, with an error wrapping ErrUnknownTool.
func (c *Client) filter(all []*sdk.Tool) ([]*sdk.Tool, error) {
	var missingErr error
	if len(c.cfg.EnableTools) > 0 {
		var missing []string
		for _, n := range c.cfg.EnableTools {
			if !slices.ContainsFunc(all, func(t *sdk.Tool) bool { return t.Name == n }) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			have := make([]string, len(all))
			for i, t := range all {
				have[i] = t.Name
			}
			missingErr = fmt.Errorf("%w: MCP server %q has no tool %s (it has %d tools: %s)", ErrUnknownTool, c.cfg.Name,
				nameList(missing), len(have), nameList(have))
		}
	}
	for _, n := range c.cfg.DisableTools {
		if slices.ContainsFunc(all, func(t *sdk.Tool) bool { return t.Name == n }) {
			continue
		}
		c.mu.Lock()
		warned := c.disableWarned[n]
		if c.disableWarned == nil {
			c.disableWarned = map[string]bool{}
		}
		c.disableWarned[n] = true
		c.mu.Unlock()
		if !warned {
			c.log.Warn("disable_tools names a tool the MCP server does not have (misspelt, a tool meant stays enabled)", "tool", n, "tools", len(all))
		}
	}
	out := make([]*sdk.Tool, 0, len(all))
	for _, t := range all {
		if len(c.cfg.EnableTools) > 0 && !slices.Contains(c.cfg.EnableTools, t.Name) {
			continue
		}
		if slices.Contains(c.cfg.DisableTools, t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out, missingErr
}

// Register lists the server's tools and registers them in tk as
// mcp__{server}__{tool}, in the configured group (created if missing),
// with the server's input schema and flags from its annotations (see
// ToolName). Calling it again re-syncs: changed tools are replaced and
// tools the server no longer lists are removed. A tool whose name is taken
// by another registration, or whose schema the toolkit rejects, is skipped
// with a warning. The client re-syncs by itself (see "Keeping the tools
// current" in the package doc). A Client serves one Toolkit: registering
// in another is an error.
//
// An enable_tools name the server does not list fails the first
// registration (ErrUnknownTool: a configuration error). At a re-sync the
// server dropped the tool since: the tools it still has are synced (the
// one it dropped leaves the toolkit) and the missing names are warned of,
// once for each set of them; the registration would otherwise stand
// still, keeping the dropped tool and the others as they were.
func (c *Client) Register(ctx context.Context, tk *toolkit.Toolkit) error {
	all, err := c.listAll(context.WithValue(ctx, syncingKey{}, true))
	if err != nil {
		return err
	}
	tools, err := c.filter(all)
	c.mu.Lock()
	resync := c.synced && c.tk == tk
	warned := c.missingWarned
	c.missingWarned = ""
	if err != nil && resync {
		c.missingWarned = err.Error()
	}
	c.mu.Unlock()
	if err != nil {
		if !resync {
			return err
		}
		if warned != err.Error() {
			c.log.Warn("enable_tools names a tool the MCP server no longer lists; the tools it has are re-synced", "error", err)
		}
	}
	return c.sync(tk, tools)
}

// syncingKey marks the context of Register's listing: a reconnect it
// waits for needs no re-listing of its own (dial), the listing is one.
type syncingKey struct{}

func (c *Client) sync(tk *toolkit.Toolkit, tools []*sdk.Tool) error {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if err := c.checkOpen(); err != nil {
		return err
	}
	if g := c.cfg.Group; g != "" && !slices.ContainsFunc(tk.Groups(), func(x toolkit.Group) bool { return x.Name == g }) {
		err := tk.AddGroup(toolkit.Group{Name: g, Description: fmt.Sprintf("Tools from the MCP server %q.", c.cfg.Name)})
		if err != nil && !slices.ContainsFunc(tk.Groups(), func(x toolkit.Group) bool { return x.Name == g }) {
			return fmt.Errorf("mcp: server %q: creating group %q: %w", c.cfg.Name, g, err)
		}
	}
	c.mu.Lock()
	owned, other := slices.Clone(c.names), c.tk != nil && c.tk != tk
	c.mu.Unlock()
	if other {
		return fmt.Errorf("mcp: server %q: a Client registers its tools in one Toolkit; use another Client for another Toolkit", c.cfg.Name)
	}
	ownedSet := make(map[string]bool, len(owned))
	for _, n := range owned {
		ownedSet[n] = true
	}
	safe := map[string]bool{}
	for _, t := range tools {
		if a := t.Annotations; a != nil && (a.ReadOnlyHint || a.IdempotentHint) {
			safe[t.Name] = true
		}
	}
	// The tools go in as one batch (toolkit.AddAll: one copy of the
	// registry, one change for the worker to announce). When the toolkit
	// refuses some, the batch is chosen again without them (a tool left
	// out frees room under MaxServerToolBytes, and its sanitised name for
	// another of the server's), and the warnings are those of the choice
	// that was registered.
	//
	// The room is what the servers mounted with this one leave of
	// Options.MaxToolBytes (budget.go), held until the registration is
	// made so that two servers registering at once do not both take it.
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	others := c.budget.others(c)
	room := min(MaxServerToolBytes, c.budget.limit-others)
	refused := map[int]bool{}  // by index in tools
	var refusals []skipWarning // why the toolkit refused them
	alone := false             // refusedAlone has looked at the tools
	var names []string
	var defs map[string]string
	var size int
	var leftOut []string // for want of room in the announcement
	var leftBytes int
	for {
		var batch []toolkit.Registration
		var from []int // the index in tools of each of batch
		var warnings []skipWarning
		warn := func(t *sdk.Tool, msg string, args ...any) {
			warnings = append(warnings, newSkipWarning(t, msg, args...))
		}
		names, defs = nil, map[string]string{}
		size, leftOut, leftBytes = 0, nil, 0
		for i, t := range tools {
			if refused[i] {
				continue
			}
			name := ToolName(c.cfg.Name, t.Name)
			if _, taken := defs[name]; taken {
				warn(t, "MCP tool skipped: its name collides with another tool of the server after sanitising", "name", name)
				continue
			}
			if _, ok := tk.Get(name); ok && !ownedSet[name] {
				// Refused whichever of the server's tools under the name
				// comes: the others are not tried one pass each.
				warn(t, "MCP tool skipped: its name is taken in the toolkit", "name", name)
				continue
			}
			if overSchema(t.InputSchema) {
				warn(t, "MCP tool skipped: its input schema alone is over MaxServerToolBytes",
					"limit", MaxServerToolBytes)
				continue
			}
			schema, err := inputSchema(t.InputSchema)
			if err != nil {
				warn(t, "MCP tool skipped", "error", err)
				continue
			}
			desc := t.Description
			if desc == "" {
				desc = t.Title
			}
			b, _ := json.Marshal(schema) // it was made from JSON
			order := c.orders.of(t.Name, t.InputSchema)
			n := announcedSize(announced(name, desc, c.cfg.Group, schema, order, t.Annotations))
			if n > MaxServerToolBytes-size {
				warn(t, "MCP tool skipped: the server's tools would be over MaxServerToolBytes",
					"bytes", n, "limit", MaxServerToolBytes)
				continue
			}
			if n > room-size {
				leftOut = append(leftOut, t.Name)
				leftBytes += n
				continue
			}
			ann, _ := json.Marshal(t.Annotations)
			ord, _ := json.Marshal(order)
			// The MCP name too: another one that sanitises the same needs a
			// handler that calls it.
			def := strings.Join([]string{t.Name, desc, string(b), string(ann), string(ord)}, "\x00")
			names = append(names, name)
			defs[name] = def
			size += n
			if _, ok := tk.Get(name); ok && ownedSet[name] && c.defs[name] == def {
				// Unchanged: registering it again would be a toolkit change,
				// which the worker announces to the whole fleet.
				continue
			}
			batch = append(batch, c.registration(t, name, desc, schema, order, ownedSet[name]))
			from = append(from, i)
		}
		err := tk.AddAll(batch...)
		if err == nil {
			c.warnSkipped(append(refusals, warnings...))
			break
		}
		var be *toolkit.BatchError
		if !errors.As(err, &be) || len(be.Failed) == 0 { // not a refusal of some: nothing to drop
			return fmt.Errorf("mcp: server %q: registering its tools: %w", c.cfg.Name, err)
		}
		for i, ierr := range be.Failed {
			refusals = append(refusals, newSkipWarning(tools[from[i]], "MCP tool skipped", "error", ierr))
			refused[from[i]] = true
		}
		if !alone {
			// Each refusal hands the tool's name and room to another,
			// which the next pass may find refused in turn: a pass each
			// for thousands of tools under one sanitised name, the whole
			// batch validated every time. Those the toolkit refuses
			// whatever else it holds are found now, all at once.
			alone = true
			refusals = append(refusals, c.refusedAlone(tools, refused)...)
		}
	}
	for tool := range c.cfg.Presets {
		if !slices.ContainsFunc(tools, func(t *sdk.Tool) bool { return t.Name == tool }) {
			c.log.Warn("MCP presets for a tool the server does not have", "server", c.cfg.Name, "tool", tool)
		}
	}
	var stale []string
	for _, n := range owned {
		if _, kept := defs[n]; !kept {
			stale = append(stale, n)
		}
	}
	tk.Remove(stale...)
	for _, o := range c.budget.set(c, size, len(leftOut) > 0) {
		o.relist() // room freed: it may fit more now
	}
	if len(leftOut) > 0 {
		c.log.Error("MCP server's tools left out: no room left for them in the worker's announcement, which the servers mounted together share (MaxToolBytes); the tools that fit are served",
			"server", c.cfg.Name, "tools_left_out", len(leftOut), "first", cutText(leftOut[0], toolkit.MaxNameLen),
			"bytes_left_out", leftBytes, "registered_bytes", size, "room", max(room, 0), "other_servers_bytes", others, "limit", c.budget.limit)
	}
	c.defs = defs
	c.mu.Lock()
	c.tk, c.names, c.safe, c.synced = tk, names, safe, true
	c.mu.Unlock()
	c.refreshPending()
	return nil
}

// registration is the server's tool t registered as name; override
// replaces the tool of that name (the client's own).
func (c *Client) registration(t *sdk.Tool, name, desc string, schema map[string]any, order []toolkit.KeyOrder, override bool) toolkit.Registration {
	opts := toolOptions(t, c.cfg.Group)
	if c.cfg.SessionBound {
		opts = append(opts, toolkit.SessionBound())
	}
	if p := c.cfg.Presets[t.Name]; len(p) > 0 {
		opts = append(opts, toolkit.WithPresets(p))
	}
	if override {
		opts = append(opts, toolkit.OnConflict(toolkit.ConflictOverride))
	}
	if order != nil {
		opts = append(opts, toolkit.WithSchemaOrder(order))
	}
	return toolkit.Registration{Tool: toolkit.Raw(name, desc, schema, c.handler(t.Name)), Options: opts}
}

// skipWarning is the warning of a tool skipped at registration.
type skipWarning struct {
	key  string // the message and the tool's whole name
	msg  string
	args []any
}

func newSkipWarning(t *sdk.Tool, msg string, args ...any) skipWarning {
	return skipWarning{key: msg + "\x00" + t.Name, msg: msg, args: append([]any{"tool", cutText(t.Name, toolkit.MaxNameLen)}, args...)}
}

// warnSkipped logs the warnings of a registration but those the last
// one logged too: a server's listings repeat its tools, and one
// re-listed every second would have the same warnings written each
// time, thousands for a server of thousands of skipped tools.
func (c *Client) warnSkipped(warnings []skipWarning) {
	now := make(map[string]bool, len(warnings))
	for _, w := range warnings {
		if !c.skipWarned[w.key] && !now[w.key] {
			c.log.Warn(w.msg, w.args...)
		}
		now[w.key] = true
	}
	c.skipWarned = now
}

// refusedAlone marks in refused the tools of tools (by index) that a
// toolkit refuses whatever else it holds (a schema it does not take, a
// preset that is not a property) and returns their warnings. They are
// registered in one batch in a toolkit of their own, under their names,
// each replacing another of its name.
func (c *Client) refusedAlone(tools []*sdk.Tool, refused map[int]bool) []skipWarning {
	own := toolkit.New(&toolkit.Options{Logger: slog.New(slog.DiscardHandler)})
	if g := c.cfg.Group; g != "" {
		if err := own.AddGroup(toolkit.Group{Name: g, Description: g}); err != nil {
			return nil
		}
	}
	var batch []toolkit.Registration
	var from []int
	for i, t := range tools {
		if refused[i] || overSchema(t.InputSchema) {
			continue
		}
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			continue // skipped with a warning by the registration
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		batch = append(batch, c.registration(t, ToolName(c.cfg.Name, t.Name), desc, schema, c.orders.of(t.Name, t.InputSchema), true))
		from = append(from, i)
	}
	var be *toolkit.BatchError
	if !errors.As(own.AddAll(batch...), &be) {
		return nil
	}
	var warnings []skipWarning
	for i, err := range be.Failed {
		warnings = append(warnings, newSkipWarning(tools[from[i]], "MCP tool skipped", "error", err))
		refused[from[i]] = true
	}
	return warnings
}

// announced is a tool's entry in its worker's announcement, as far as
// its registration decides it (toolOptions).
func announced(name, desc, group string, schema map[string]any, order []toolkit.KeyOrder, a *sdk.ToolAnnotations) wire.AnnouncedTool {
	if group == "" {
		group = toolkit.BasicGroup
	}
	idem := toolkit.IdempotencyUnknown
	switch {
	case a != nil && a.ReadOnlyHint:
		idem = toolkit.NoSideEffects
	case a != nil && a.IdempotentHint:
		idem = toolkit.Idempotent
	}
	return wire.AnnouncedTool{Name: name, Description: desc, Group: group, ReadOnly: idem == toolkit.NoSideEffects,
		Idempotency: idem.String(), Parameters: schema, Order: order, Kind: toolkit.KindMCP}
}

// refreshPending re-lists once a toolkit is known when the server
// announced tools/list_changed before (during the first listing, say).
func (c *Client) refreshPending() {
	c.mu.Lock()
	pending := c.pendingRefresh
	c.pendingRefresh = false
	c.mu.Unlock()
	if pending {
		c.relist()
	}
}

// Tools returns the toolkit names this client has registered.
func (c *Client) Tools() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// Start is Register for a worker that must not die because one server is
// down: a server that cannot be reached or listed is skipped with a
// warning and retried in the background (with backoff) until it answers.
// Configuration errors (an enable_tools name the server lacks, a group
// that cannot be created) are returned.
func (c *Client) Start(ctx context.Context, tk *toolkit.Toolkit) error {
	err := c.Register(ctx, tk)
	var ue *unreachableError
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	c.log.Warn("MCP server skipped for now; retrying in the background", "error", err)
	c.mu.Lock()
	c.tk = tk
	c.mu.Unlock()
	c.refreshPending()
	c.startRetry(tk)
	return nil
}

func (c *Client) startRetry(tk *toolkit.Toolkit) {
	c.mu.Lock()
	if c.retry {
		c.mu.Unlock()
		return
	}
	c.retry = true
	c.mu.Unlock()
	c.goBG(func() {
		defer func() {
			c.mu.Lock()
			c.retry = false
			c.mu.Unlock()
		}()
		delay := c.opts.RetryInterval
		for {
			timer := time.NewTimer(delay)
			select {
			case <-c.life.Done():
				timer.Stop()
				return
			case <-timer.C:
			case <-c.wake:
				timer.Stop()
				delay = c.opts.RetryInterval
			}
			err := c.Register(c.life, tk)
			if err == nil {
				c.log.Info("MCP server is back; its tools are registered", "tools", len(c.Tools()))
				return
			}
			if errors.Is(err, ErrClosed) || c.life.Err() != nil {
				return
			}
			c.log.Warn("MCP server still unavailable", "error", err, "retry_in", delay)
			delay = min(delay*2, c.opts.MaxRetryInterval)
		}
	})
}

// retryNow wakes the background retry, if one waits.
func (c *Client) retryNow() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// defaultRelistInterval is Options.RelistInterval's default.
const defaultRelistInterval = 5 * time.Minute

// relist asks refreshLoop to re-sync the registered tools: one listing
// at a time, and one more queued at most, however often it is asked.
func (c *Client) relist() {
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}

// cannotTell reports whether the server cannot be relied on to announce a
// change of its tools: it is stateless (no session lives between calls
// to hear it), or its capabilities at the last initialize do not declare
// tools.listChanged. Before any initialize it is false: the background
// retry lists the tools when the server answers.
func (c *Client) cannotTell() bool {
	caps := c.caps.Load()
	if caps == nil {
		return false
	}
	return c.cfg.mode() == ModeStateless || caps.Tools == nil || !caps.Tools.ListChanged
}

// minRelistGap is the least time between the starts of two re-listings
// a server's notifications (or a reconnect) ask for.
const minRelistGap = time.Second

// refreshLoop re-syncs the registered tools when asked (relist: the
// server announced tools/list_changed, a stateful session reconnected, a
// call named a tool the server does not know) and, for a server that
// cannot tell of a change, every RelistInterval.
func (c *Client) refreshLoop() {
	defer c.bg.Done()
	var tick <-chan time.Time
	if every := c.opts.RelistInterval; every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	var last time.Time // the last re-listing's start
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.refresh:
			// A server announcing changes in a loop is listed once a
			// minRelistGap, whatever it sends (they coalesce meanwhile).
			if wait := time.Until(last.Add(minRelistGap)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-c.life.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		case <-tick:
			c.mu.Lock()
			retrying := c.retry
			c.mu.Unlock()
			if !c.cannotTell() || retrying { // the retry lists them when the server is back
				continue
			}
		}
		c.mu.Lock()
		tk := c.tk
		c.pendingRefresh = tk == nil // no toolkit yet: the first sync re-lists
		c.mu.Unlock()
		if tk == nil {
			continue
		}
		last = time.Now()
		if err := c.Register(c.life, tk); err != nil && !errors.Is(err, ErrClosed) && c.life.Err() == nil {
			c.log.Warn("re-listing MCP tools failed", "error", err)
			var ue *unreachableError
			if errors.As(err, &ue) {
				c.startRetry(tk)
			}
		}
	}
}

// nameList quotes the first of names for an error, each cut to a
// readable length: a server's tool names are many and long at will.
func nameList(names []string) string {
	const most, longest = 20, 64
	var b strings.Builder
	for i, n := range names {
		if i == most {
			fmt.Fprintf(&b, ", and %d more", len(names)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if len(n) > longest {
			cut := longest
			for cut > 0 && !utf8.RuneStart(n[cut]) {
				cut--
			}
			n = n[:cut] + "…"
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}
