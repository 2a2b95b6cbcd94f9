package toolkit

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
)

// GroupState stores which groups are active for each session. Activation is
// absolute: Store replaces the whole set. The session it is given is a
// session scope (SessionScope): the toolkit passes ToolCall.Scope, so the
// sessions of different caller identities never share state.
//
// Implementations must be safe for concurrent use. The in-memory one is
// NewMemoryState; the bus package has one on a JetStream KV bucket, whose
// revisions let a worker wait for a write made by another worker.
type GroupState interface {
	// Load returns the active groups of session. ok is false when the
	// session has never stored any (the toolkit's defaults then apply). A
	// non-zero minRevision asks for a state at least that recent.
	Load(ctx context.Context, session string, minRevision uint64) (groups []string, revision uint64, ok bool, err error)
	// Store replaces the active groups of session and returns the new
	// revision.
	Store(ctx context.Context, session string, groups []string) (revision uint64, err error)
}

// MemoryState is an in-process GroupState. Revisions count stores across
// all sessions.
//
// It remembers at most MaxMemorySessions sessions, and
// MaxMemorySessionBytes of their names: past either, the session least
// recently loaded or stored is forgotten, and is back to the toolkit's
// default groups (as a session whose KV state expired), so a
// long-running process whose callers invent session names, short or
// long, stays bounded. The session stored last is kept, even alone over
// MaxMemorySessionBytes.
type MemoryState struct {
	mu       sync.Mutex
	rev      uint64
	sessions map[string]*list.Element // of *memoryEntry
	order    list.List                // most recently used first
	bytes    int                      // of the sessions' names
}

// MaxMemorySessions bounds the sessions a MemoryState remembers, and
// MaxMemorySessionBytes the bytes of their names: a name is the caller's
// to choose, bounded only by the size of its request.
const (
	MaxMemorySessions     = 100_000
	MaxMemorySessionBytes = 16 << 20
)

type memoryEntry struct {
	session string
	groups  []string
	rev     uint64
}

// NewMemoryState returns an empty in-memory GroupState.
func NewMemoryState() *MemoryState {
	return &MemoryState{sessions: make(map[string]*list.Element)}
}

func (m *MemoryState) Load(_ context.Context, session string, _ uint64) ([]string, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.sessions[session]
	if !ok {
		return nil, 0, false, nil
	}
	m.order.MoveToFront(el)
	e := el.Value.(*memoryEntry)
	return slices.Clone(e.groups), e.rev, true, nil
}

func (m *MemoryState) Store(_ context.Context, session string, groups []string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rev++
	e := &memoryEntry{session: session, groups: slices.Clone(groups), rev: m.rev}
	if el, ok := m.sessions[session]; ok {
		el.Value = e
		m.order.MoveToFront(el)
		return m.rev, nil
	}
	m.sessions[session] = m.order.PushFront(e)
	m.bytes += len(session)
	for m.order.Len() > 1 && (m.order.Len() > MaxMemorySessions || m.bytes > MaxMemorySessionBytes) {
		oldest := m.order.Back()
		m.order.Remove(oldest)
		gone := oldest.Value.(*memoryEntry).session
		delete(m.sessions, gone)
		m.bytes -= len(gone)
	}
	return m.rev, nil
}

// SessionState is a session's state in the toolkit, as AgentScope 1.x's
// Toolkit.state_dict gives it: {"active_groups": [...]}.
type SessionState struct {
	ActiveGroups []string `json:"active_groups"`
}

// ExportState returns a session's state (1.x state_dict): its active
// groups that the toolkit has, in the toolkit's group order (as 1.x
// lists them, whatever order they were activated or stored in, by this
// toolkit or another sharing its GroupState), so that ImportState takes
// it back. A group removed since the session activated it is left out,
// as 1.x's remove_tool_groups takes it out of the state.
func (tk *Toolkit) ExportState(ctx context.Context, session string) (SessionState, error) {
	groups := tk.Groups()
	active, _, err := LoadActive(ctx, tk.state, groups, session, 0)
	if err != nil {
		return SessionState{}, err
	}
	return SessionState{ActiveGroups: InGroupOrder(groups, active)}, nil
}

// InGroupOrder returns the names of active that name one of groups, in
// the order of groups; never nil.
func InGroupOrder(groups []Group, active []string) []string {
	out := make([]string, 0, len(active))
	for _, g := range groups {
		if slices.Contains(active, g.Name) && !slices.Contains(out, g.Name) {
			out = append(out, g.Name)
		}
	}
	return out
}

// ImportState sets a session's state (1.x load_state_dict). Unlike 1.x,
// which ignores the names of groups it does not have, every group it
// names must exist, or nothing changes and an error says which does not.
// It returns the new groups revision.
func (tk *Toolkit) ImportState(ctx context.Context, session string, st SessionState) (uint64, error) {
	groups := tk.Groups()
	for _, g := range st.ActiveGroups {
		if !slices.ContainsFunc(groups, func(x Group) bool { return x.Name == g }) {
			return 0, fmt.Errorf("toolkit: the state names the group %q, which does not exist", unheldName(g))
		}
	}
	var ordered []string // in group order, as reset_tools stores them
	for _, g := range groups {
		if slices.Contains(st.ActiveGroups, g.Name) {
			ordered = append(ordered, g.Name)
		}
	}
	return tk.state.Store(ctx, session, ordered)
}
