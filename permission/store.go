package permission

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// SessionPolicy is what a session stores: its mode ("" means the guard's
// default) and its own rules, added to the worker-wide ones.
type SessionPolicy struct {
	Mode  Mode   `json:"mode,omitempty" msgpack:"mode,omitempty"`
	Rules []Rule `json:"rules,omitempty" msgpack:"rules,omitempty"`
}

// validate checks that the policy's mode is one of Modes (or "") and its
// rules are valid, as SetMode and AddRule make them.
func (p SessionPolicy) validate() error {
	if p.Mode != "" && !slices.Contains(Modes, p.Mode) {
		return fmt.Errorf("permission: unknown mode %q", p.Mode)
	}
	for _, r := range p.Rules {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Pending is a call that ended approval_required, kept so a human can
// approve it by call id.
type Pending struct {
	// Session is the call's session scope (toolkit.SessionScope: the
	// caller's identity and session; toolkit.SplitScope parts them).
	Session string `json:"session" msgpack:"session"`
	CallID  string `json:"call_id" msgpack:"call_id"`
	Tool    string `json:"tool" msgpack:"tool"`
	// Digest identifies the input (see Digest); the approval is bound to it.
	Digest string `json:"digest" msgpack:"digest"`
	// Input is the canonical JSON input, cut at MaxPendingInput bytes, for
	// the human to read before approving.
	Input     string    `json:"input" msgpack:"input"`
	Message   string    `json:"message" msgpack:"message"`
	Reason    string    `json:"reason" msgpack:"reason"`
	Safety    bool      `json:"safety,omitempty" msgpack:"safety,omitempty"`
	Suggested []Rule    `json:"suggested,omitempty" msgpack:"suggested,omitempty"`
	Created   time.Time `json:"created" msgpack:"created"`
	// Asked is set on a pending call restored after an approval of it
	// could not be written: the store's revision of the ask it restores.
	// The restored record is newer, but the ask is not: an approval of
	// the call used since that ask answered it (see Store.ApprovePending).
	// A KVStore keeps it in a header of the record (wire.HeaderAsked), not
	// in its JSON, which earlier builds decode strictly.
	Asked uint64 `json:"-" msgpack:"-"`
	// Revision is the store's version of the pending call, set by
	// FindPending, used by ApprovePending.
	Revision uint64 `json:"-" msgpack:"-"`
	// Stored is when the store stored it, on the store's clock (a
	// KVStore: the server's stamp of its message), set by FindPending and
	// ListPending; zero from a MemoryStore. Its age is judged by it, not
	// by Created, which the worker that asked wrote with its own clock.
	Stored time.Time `json:"-" msgpack:"-"`
}

// askedAt is the revision of the ask p records: its own, or that of the
// ask it restores (Asked), whichever is older.
func (p Pending) askedAt() uint64 {
	if p.Asked != 0 && p.Asked < p.Revision {
		return p.Asked
	}
	return p.Revision
}

// MaxPendingInput caps Pending.Input.
const MaxPendingInput = 8 << 10

// Approval lets one call run once: the call with this session and id,
// calling this tool with input of this digest. With Denied it is the
// refusal of that call instead (Guard.Deny), kept under the same key.
type Approval struct {
	Session string    `json:"session" msgpack:"session"`
	CallID  string    `json:"call_id" msgpack:"call_id"`
	Tool    string    `json:"tool" msgpack:"tool"`
	Digest  string    `json:"digest" msgpack:"digest"`
	By      string    `json:"by,omitempty" msgpack:"by,omitempty"`
	Created time.Time `json:"created" msgpack:"created"`
	// Denied marks a refusal: the call, sent again with this tool and
	// input, ends toolkit.CodeDenied with Reason, each time, until the
	// record expires; it is never consumed. Builds before it decode
	// approvals strictly and refuse a record with this field (no
	// approval: the call asks again), so it is always written, never
	// false on a denial.
	Denied bool `json:"denied,omitempty" msgpack:"denied,omitempty"`
	// Reason is the refuser's reason, for the model (at most
	// MaxDenyReason bytes); only with Denied.
	Reason string `json:"reason,omitempty" msgpack:"reason,omitempty"`
	// Revision is the store's version of the approval, set by
	// LoadApproval, used by ConsumeApproval.
	Revision uint64 `json:"-" msgpack:"-"`
	// Stored is when the store stored it, on the store's clock (a
	// KVStore: the server's stamp of its message), set by LoadApproval;
	// zero from a MemoryStore. Its age is judged by it, not by Created,
	// which the approver wrote with its own clock.
	Stored time.Time `json:"-" msgpack:"-"`
}

// Store keeps per-session policies, pending calls and approvals. A
// session is a session scope (toolkit.SessionScope), so the same session
// name of two caller identities is two sessions. Every
// worker of a fleet must see the same store (KVStore); MemoryStore serves
// a single process. Implementations are safe for concurrent use.
type Store interface {
	// LoadSession returns a session's policy; ok is false when it has none.
	LoadSession(ctx context.Context, session string) (p SessionPolicy, ok bool, err error)
	// UpdateSession changes a session's policy atomically: fn gets the
	// current policy (zero when none) and edits it; an error from fn aborts.
	UpdateSession(ctx context.Context, session string, fn func(*SessionPolicy) error) (SessionPolicy, error)
	// PutPending records (or replaces) a pending call.
	PutPending(ctx context.Context, p Pending) error
	// FindPending returns the pending calls with this id; session "" means
	// any session.
	FindPending(ctx context.Context, session, callID string) ([]Pending, error)
	// ListPending returns at most limit pending calls, the least recently
	// recorded first; session "" means every session. more says that
	// others were left out.
	ListPending(ctx context.Context, session string, limit int) (ps []Pending, more bool, err error)
	// DeletePending forgets a pending call; unknown ones are ignored.
	DeletePending(ctx context.Context, session, callID string) error
	// ApprovePending turns the pending call p, as FindPending read it,
	// into the approval a: p is deleted if it is still that revision and a
	// stored, unless an approval of the call was used after p was asked
	// (the call ran since it asked; a p restored by a failed approval was
	// asked at Pending.Asked). false when p was deleted or replaced
	// since (by another approver, by the approved call that ran, by the
	// call asking again); ErrApprovalUsed when such a use came first. Of
	// several approvers of one call, the approvals stored let it run once.
	ApprovePending(ctx context.Context, p Pending, a Approval) (bool, error)
	// PutApproval records (or replaces) an approval.
	PutApproval(ctx context.Context, a Approval) error
	// LoadApproval returns the approval for a call, with its Revision.
	LoadApproval(ctx context.Context, session, callID string) (a Approval, ok bool, err error)
	// ConsumeApproval deletes the approval if it is still the revision that
	// was loaded; false when another worker consumed (or replaced) it first.
	ConsumeApproval(ctx context.Context, a Approval) (bool, error)
}

// MemoryStore is an in-process Store. It keeps at most MaxMemoryPending
// pending calls, and as many approvals, the oldest forgotten first: every
// call that asks for approval records one, and every approval stays until
// its call is sent again, which nothing else expires, so a caller sending
// such calls under ever new ids (and having them approved, by a client
// that answers a gateway's elicitations) would grow it for good. A
// forgotten approval's call asks again. (A KVStore's bucket expires them
// and is bounded in bytes.)
type MemoryStore struct {
	mu        sync.Mutex
	rev       uint64
	sessions  map[string]SessionPolicy
	pending   map[[2]string]*list.Element // of a Pending in order
	order     *list.List                  // of Pending, the oldest recorded first
	approvals map[[2]string]*list.Element // of an Approval in approvalQ
	approvalQ *list.List                  // of Approval, the oldest stored first
	// used: the revision an approval of the call was used at, while the
	// call's pending call recorded before that use is still there (only
	// it can be refused for it: a later ask is newer than the use).
	used map[[2]string]uint64
}

// MaxMemoryPending is how many pending calls a MemoryStore keeps, and how
// many approvals.
const MaxMemoryPending = 10_000

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		sessions:  map[string]SessionPolicy{},
		pending:   map[[2]string]*list.Element{},
		order:     list.New(),
		approvals: map[[2]string]*list.Element{},
		approvalQ: list.New(),
		used:      map[[2]string]uint64{},
	}
}

func clonePolicy(p SessionPolicy) SessionPolicy {
	p.Rules = slices.Clone(p.Rules)
	return p
}

// LoadSession implements Store.
func (m *MemoryStore) LoadSession(_ context.Context, session string) (SessionPolicy, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.sessions[session]
	return clonePolicy(p), ok, nil
}

// UpdateSession implements Store.
func (m *MemoryStore) UpdateSession(_ context.Context, session string, fn func(*SessionPolicy) error) (SessionPolicy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clonePolicy(m.sessions[session])
	if err := fn(&p); err != nil {
		return SessionPolicy{}, err
	}
	m.sessions[session] = clonePolicy(p)
	return p, nil
}

// PutPending implements Store.
func (m *MemoryStore) PutPending(_ context.Context, p Pending) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.Suggested = slices.Clone(p.Suggested)
	m.rev++
	p.Revision = m.rev
	k := [2]string{p.Session, p.CallID}
	delete(m.used, k) // the ask it replaces, if any, is gone
	if e := m.pending[k]; e != nil {
		e.Value = p
		m.order.MoveToBack(e)
		return nil
	}
	if m.order.Len() >= MaxMemoryPending {
		old := m.order.Remove(m.order.Front()).(Pending)
		ok := [2]string{old.Session, old.CallID}
		delete(m.pending, ok)
		delete(m.used, ok)
	}
	m.pending[k] = m.order.PushBack(p)
	return nil
}

// FindPending implements Store.
func (m *MemoryStore) FindPending(_ context.Context, session, callID string) ([]Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Pending
	if session != "" { // one key: the lookup of every call that asks
		if e := m.pending[[2]string{session, callID}]; e != nil {
			p := e.Value.(Pending)
			p.Suggested = slices.Clone(p.Suggested)
			out = append(out, p)
		}
		return out, nil
	}
	for k, e := range m.pending {
		if k[1] == callID {
			p := e.Value.(Pending)
			p.Suggested = slices.Clone(p.Suggested)
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pending) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// ListPending implements Store.
func (m *MemoryStore) ListPending(ctx context.Context, session string, limit int) ([]Pending, bool, error) {
	return listPending(ctx, m, session, limit)
}

// walkPending implements pendingWalker. each runs outside m.mu (a
// Guard's reads its session's policy from m), over the pending calls as
// they were when the walk began.
func (m *MemoryStore) walkPending(_ context.Context, session string, begin func(), each func(Pending) bool) error {
	m.mu.Lock()
	var ps []Pending
	for e := m.order.Front(); e != nil; e = e.Next() {
		if p := e.Value.(Pending); session == "" || p.Session == session {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	begin()
	for _, p := range ps {
		p.Suggested = slices.Clone(p.Suggested)
		if !each(p) {
			break
		}
	}
	return nil
}

// pendingWalker is a Store that reads its pending calls one by one, the
// least recently recorded first, of one session or (session "") every
// session, calling each with each until it answers false; begin runs
// before the first, and again when the walk starts over (a KVStore's
// watch made again), so what each gathered is to be forgotten. A Guard
// lists through it what waits for approval, skipping what does not,
// holding no more than it lists.
type pendingWalker interface {
	walkPending(ctx context.Context, session string, begin func(), each func(Pending) bool) error
}

// listPending is Store.ListPending over a pendingWalker.
func listPending(ctx context.Context, w pendingWalker, session string, limit int) (out []Pending, more bool, err error) {
	err = w.walkPending(ctx, session, func() { out, more = out[:0], false }, func(p Pending) bool {
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, p)
		return true
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// DeletePending implements Store.
func (m *MemoryStore) DeletePending(_ context.Context, session, callID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{session, callID}
	if e := m.pending[k]; e != nil {
		m.order.Remove(e)
		delete(m.pending, k)
	}
	delete(m.used, k)
	return nil
}

// ApprovePending implements Store.
func (m *MemoryStore) ApprovePending(_ context.Context, p Pending, a Approval) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Session, p.CallID}
	e := m.pending[k]
	if m.used[k] > p.askedAt() {
		// Answered by that use: not left listed as waiting (a newer ask
		// under the key stays).
		if e != nil && e.Value.(Pending).Revision == p.Revision {
			m.order.Remove(e)
			delete(m.pending, k)
			delete(m.used, k)
		}
		return false, ErrApprovalUsed
	}
	if e == nil || e.Value.(Pending).Revision != p.Revision {
		return false, nil
	}
	m.order.Remove(e)
	delete(m.pending, k)
	m.rev++
	a.Revision = m.rev
	m.putApprovalLocked(a)
	return true, nil
}

// PutApproval implements Store.
func (m *MemoryStore) PutApproval(_ context.Context, a Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rev++
	a.Revision = m.rev
	m.putApprovalLocked(a)
	return nil
}

// putApprovalLocked stores a as its call's approval, the newest, and
// forgets the oldest past MaxMemoryPending; m.mu is held.
func (m *MemoryStore) putApprovalLocked(a Approval) {
	k := [2]string{a.Session, a.CallID}
	if e := m.approvals[k]; e != nil {
		e.Value = a
		m.approvalQ.MoveToBack(e)
		return
	}
	if m.approvalQ.Len() >= MaxMemoryPending {
		old := m.approvalQ.Remove(m.approvalQ.Front()).(Approval)
		delete(m.approvals, [2]string{old.Session, old.CallID})
	}
	m.approvals[k] = m.approvalQ.PushBack(a)
}

// LoadApproval implements Store.
func (m *MemoryStore) LoadApproval(_ context.Context, session, callID string) (Approval, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.approvals[[2]string{session, callID}]
	if e == nil {
		return Approval{}, false, nil
	}
	return e.Value.(Approval), true, nil
}

// ConsumeApproval implements Store.
func (m *MemoryStore) ConsumeApproval(_ context.Context, a Approval) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{a.Session, a.CallID}
	e := m.approvals[k]
	if e == nil || e.Value.(Approval).Revision != a.Revision {
		return false, nil
	}
	m.approvalQ.Remove(e)
	delete(m.approvals, k)
	m.rev++
	if m.pending[k] != nil {
		m.used[k] = m.rev // as a KV delete marker: ApprovePending
	}
	return true, nil
}
