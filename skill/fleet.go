package skill

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// Skills across a fleet. A worker announces its skills' names,
// descriptions, groups and directories under wire.MetaSkills (Announce);
// clients merge them from every live worker (FleetSkills) and render the
// <agent-skills> prompt (FleetInstructions). The bodies stay on the
// workers: each answers for its own skills on wire.SkillSubject(instance)
// (Serve), and a worker's Skill tool fetches a skill it does not have from
// one that declares it (Fetch).

// Announced is a skill as a worker announces it: what a client needs to
// list it in the <agent-skills> prompt.
type Announced struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Group is "basic" or one of the announcement's groups.
	Group string `json:"group"`
	// Dir is the skill's directory on the worker's machine.
	Dir string `json:"dir"`
}

// MaxAnnounced bounds the skills part of an announcement: the JSON of
// the announced skills, at most this many bytes. The announcement holds
// the tools' schemas too and must fit the server's max_payload (1 MiB by
// default); a worker that cannot announce drops out of the fleet with
// all its tools.
const MaxAnnounced = 256 << 10

// Announce is the announcement part of a set (for
// discovery.AnnouncerOptions.Meta under wire.MetaSkills): its catalog,
// read again for every announcement so edited SKILL.md files show within
// an interval; nil when the set has no skill. Skills that would take it
// over MaxAnnounced are left out, in catalog order, and with one of
// them every earlier skill of its name, with a warning to the set's
// logger when the skills left out change. A later skill of a name
// replaces the earlier wherever both are visible, and is the one the
// worker's Skill tool answers with; announced without it, the earlier
// would be listed to sessions that see the later, with a body the
// worker does not answer with. So a basic skill that fits goes out
// with a group's skill of its name that does not fit: the fleet lists
// neither (the announcement has no way to say "basic's, unless that
// group is active"). A later skill that fits stays when an earlier one
// does not. Only the skills announced count towards MaxAnnounced: one
// left out with a later skill of its name leaves its bytes to the skills
// after it, and goes in after all when its later skills do and it fits
// in the bytes left: no skill is left out that fits beside the skills
// announced and whose later skills of its name are all announced.
//
// An announcement waits for this part as a discovery.Announcer waits
// for any Meta part: the announce interval, at most 1 s. That bound is
// the Announcer's, not this package's: it keeps a worker whose skills
// read slowly (a loaded machine, a mount that stopped answering)
// announcing its tools within the fleets' TTL. Past it the announcement
// goes out with the skills last announced (none, the first time), and
// the Announcer announces again the moment the catalog comes: skills
// once announced never leave an announcement because a read was slow,
// and a worker's first skills follow its first announcement as soon as
// they are read. The function returned waits AnnounceWait at most for
// the catalog (FirstLoadWait for the first catalog, so a slow first read
// is not taken for no skills), then returns the last catalog read, with
// a warning (again every minute while the read goes on, with how long it
// has been going); that wait bounds how long one call of it runs, and so
// when a late catalog is announced, not how long an announcement waits.
// A Loader itself waits LoadWait at most, and names its directory.
func Announce(s *Set) func() any {
	var warnMu sync.Mutex
	var warned string // the skills left out, as last logged
	build := func() any {
		var all []Announced
		var sizes []int // all[i]'s bytes in the announcement; -1: it has none
		for _, sk := range s.Catalog() {
			a := Announced{Name: sk.Name, Description: sk.Description, Group: cmp.Or(sk.Group, toolkit.BasicGroup), Dir: sk.Dir}
			n := -1
			if b, err := json.Marshal(a); err == nil {
				n = len(b) + 1
			}
			all, sizes = append(all, a), append(sizes, n)
		}
		keep := fitting(all, sizes)
		var out []Announced
		var left []string
		for i, a := range all {
			if !keep[i] {
				left = append(left, a.Group+"/"+a.Name)
				continue
			}
			out = append(out, a)
		}
		key := strings.Join(left, "\x00")
		warnMu.Lock()
		changed := key != warned
		warned = key
		warnMu.Unlock()
		if changed && len(left) > 0 {
			s.log.Warn("skill: skills left out of the announcement, which would be too large: clients of the fleet do not list them",
				"count", len(left), "limit_bytes", MaxAnnounced, "first", left[0])
		}
		if out == nil {
			return nil
		}
		return out
	}
	var l latest[any]
	late := func(going time.Duration) {
		s.log.Warn("skill: reading the skills takes over the announcement's wait (a skills source that does not answer?): announcing the last skills read", "wait", AnnounceWait, "stuck_for", going.Round(time.Second))
	}
	return func() any {
		v, _ := l.get(build, firstWait(&l, AnnounceWait, s.wait.first), late)
		return v
	}
}

// fitting says which of all (a catalog, in its order, with the bytes
// each takes in the announcement, -1 for none) go into an announcement
// of at most MaxAnnounced bytes: each in catalog order while it fits,
// and a skill only if every later skill of its name goes in too. The
// later replaces it wherever both are visible, and the worker's Skill
// tool answers with the later, so with the later left out the fleet
// would list a description whose body the worker does not answer with.
// An earlier one left out costs the later nothing: where the later is
// visible, it is the one listed and the one answered.
//
// The budget counts only the skills that go in: a skill left out for a
// later one of its name gives its bytes back, to be taken again in
// catalog order, and that may let in a skill after it (and so leave out
// a further earlier one of that skill's name, which gives its bytes
// back too). A skill left out for a later one stays out of these
// refits, though the later may fit with the bytes given back: letting
// the earlier in again would take them again, so the choice would not
// settle. Once it settles, the bytes left are given in catalog order to
// the skills left out whose later skills of their name all went in (and
// then to the skill before each that goes in): such a skill fits beside
// every skill announced or it stays out, and taking bytes no skill
// announced holds, it leaves none out, so nothing that fits is left
// out. Each refit leaves out one more skill at least, so the work is
// bounded by the catalog's length squared, never a search of its
// subsets.
func fitting(all []Announced, sizes []int) []bool {
	next := make([]int, len(all)) // the next skill of all[i]'s name; -1: none
	prev := make([]int, len(all)) // the skill before all[i] of its name; -1: none
	last := map[string]int{}
	for i, a := range all {
		prev[i], next[i] = -1, -1
		if j, ok := last[a.Name]; ok {
			prev[i], next[j] = j, i
		}
		last[a.Name] = i
	}
	keep := make([]bool, len(all))
	out := make([]bool, len(all)) // left out for a later skill of its name
	size := 0
	for again := true; again; {
		size, again = 0, false
		for i, n := range sizes {
			if keep[i] = !out[i] && n >= 0 && size+n <= MaxAnnounced; keep[i] {
				size += n
			}
		}
		for i := len(all) - 1; i >= 0; i-- {
			if keep[i] && next[i] >= 0 && !keep[next[i]] {
				keep[i], out[i], again = false, true, true
				size -= sizes[i]
			}
		}
	}
	var waiting indexHeap // left out, every later skill of its name in
	for i := range all {
		if !keep[i] && (next[i] < 0 || keep[next[i]]) {
			heap.Push(&waiting, i)
		}
	}
	for waiting.Len() > 0 {
		i := heap.Pop(&waiting).(int)
		if n := sizes[i]; n < 0 || size+n > MaxAnnounced {
			continue // the bytes left only shrink: it never fits
		}
		keep[i], size = true, size+sizes[i]
		if prev[i] >= 0 {
			heap.Push(&waiting, prev[i])
		}
	}
	return keep
}

// indexHeap is a container/heap of catalog indexes, the first first.
type indexHeap []int

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h indexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// firstWait is wait, or first (FirstLoadWait) when l has no value read yet to
// fall back on: a first read slower than wait (many skills, a slow disk,
// a loaded machine) is not taken for no skills.
func firstWait[T any](l *latest[T], wait, first time.Duration) time.Duration {
	if l.finished() {
		return wait
	}
	return max(wait, first)
}

// AnnounceWait is how long a call of Announce's function waits for the
// set's catalog (an announcement itself waits for it the Announcer's
// Meta wait at most: see Announce), and a listing of the Skill tool for
// the groups with skills.
const AnnounceWait = 2 * time.Second

// instanceSkills reads the skills one instance announced.
func instanceSkills(in discovery.Instance) ([]Announced, error) {
	var out []Announced
	_, err := in.DecodeMeta(wire.MetaSkills, &out)
	return out, err
}

// FleetSkills merges the skills the live instances announce: basic first,
// then the fleet's groups in order; within a group, instances in id order
// and each one's skills in its order. An identical skill announced by
// several instances is kept once; skills of groups the fleet does not
// know, and parts that cannot be read, are left out (and logged to log,
// when it is not nil).
func FleetSkills(f *discovery.Fleet, log *slog.Logger) []Skill {
	order := []string{toolkit.BasicGroup}
	for _, g := range f.Groups() {
		order = append(order, g.Name)
	}
	byGroup := map[string][]Skill{}
	seen := map[Announced]bool{}
	for _, in := range f.Instances() {
		skills, err := instanceSkills(in)
		if err != nil && log != nil {
			log.Warn("skill: ignoring the skills an instance announced", "instance", in.ID, "err", err)
		}
		for _, s := range skills {
			switch {
			case seen[s]:
				continue
			case s.Name == "" || !slices.Contains(order, s.Group):
				if log != nil {
					log.Warn("skill: ignoring an announced skill", "instance", in.ID, "skill", s.Name, "group", s.Group)
				}
				continue
			}
			seen[s] = true
			byGroup[s.Group] = append(byGroup[s.Group], Skill{Name: s.Name, Description: s.Description, Dir: s.Dir, Group: s.Group})
		}
	}
	var out []Skill
	for _, g := range order {
		out = append(out, byGroup[g]...)
	}
	return out
}

// FleetInstructions renders the <agent-skills> prompt of a session whose
// active groups are active: the fleet's skills of basic and those groups,
// with DefaultInstructionTemplate ("" when no skill is visible). A
// worker's own template override is not announced: the fleet always
// renders the default. As Set.Instructions, nil means every group's
// skills and an empty slice basic only.
func FleetInstructions(f *discovery.Fleet, active []string) string {
	all := FleetSkills(f, nil)
	if active == nil { // every group, a name once (as Set.All)
		return Render(visible(all, func(string) bool { return true }))
	}
	return Render(Visible(all, active))
}

// Declared is a skill a session sees and the instances that declare it.
type Declared struct {
	Skill
	Instances []string
}

// announced is the announcement of a skill FleetSkills merged.
func announced(sk Skill) Announced {
	return Announced{Name: sk.Name, Description: sk.Description, Group: sk.Group, Dir: sk.Dir}
}

// VisibleSources is Sources for every skill a session with the active
// groups sees, in Visible's order, decoding each instance's skills once
// (Sources for each of them decodes them all each time).
func VisibleSources(f *discovery.Fleet, active []string, log *slog.Logger) []Declared {
	declared := map[Announced][]string{}
	for _, in := range f.Instances() {
		skills, _ := instanceSkills(in)
		for _, a := range skills {
			if ids := declared[a]; len(ids) == 0 || ids[len(ids)-1] != in.ID {
				declared[a] = append(ids, in.ID)
			}
		}
	}
	var out []Declared
	for _, sk := range Visible(FleetSkills(f, log), active) {
		if ids := declared[announced(sk)]; len(ids) > 0 {
			out = append(out, Declared{Skill: sk, Instances: ids})
		}
	}
	return out
}

// Sources finds the skill a session with the active groups sees under
// name, and the instances that declare that very skill (sorted): those
// announcing it with the same group, description and directory. Another
// instance's skill of that name and group is one the session does not
// see (the visible one replaced it), and its body is not this one's.
func Sources(f *discovery.Fleet, name string, active []string) (group string, instances []string, ok bool) {
	var sk Skill
	for _, s := range Visible(FleetSkills(f, nil), active) {
		if s.Name == name {
			sk, ok = s, true
		}
	}
	if !ok {
		return "", nil, false
	}
	want := announced(sk)
	for _, in := range f.Instances() {
		skills, _ := instanceSkills(in)
		if slices.Contains(skills, want) {
			instances = append(instances, in.ID)
		}
	}
	return sk.Group, instances, len(instances) > 0
}

// Bodies provides skill bodies by name and group; *Set is one (its
// InGroup method). A name can be declared in several groups, each with
// its own body, so the skills are looked up within the group asked for.
type Bodies interface {
	InGroup(group string) []Skill
}

// Serve answers wire.SkillRequests for the bodies of set's skills on
// wire.SkillSubject(instance), in the request's encoding, from when it
// returns until the returned subscription is unsubscribed, MaxServing
// at once (an answer begun may still go out after the unsubscribe). A
// request that comes while MaxServing are being answered (reads that
// do not end: a mount that stopped answering) is refused at once with
// an error saying the worker is busy, which makes a fetcher ask the
// next instance; the refusals are logged at most once a minute, with
// their count. The subscription's callback never waits, so its
// unsubscribe and drain end whatever the answers under way do.
func Serve(nc *nats.Conn, instance string, set Bodies, log *slog.Logger) (*nats.Subscription, error) {
	if !toolkit.ValidName(instance) {
		return nil, fmt.Errorf("skill: Serve: invalid instance id %q", instance)
	}
	if log == nil {
		log = slog.Default()
	}
	subject := wire.SkillSubject(instance)
	// Each request is answered on its own goroutine, at most
	// MaxServing at once (past them, requests are refused as busy):
	// one whose read does not end (a file on a mount that stopped
	// answering) holds one turn, not every answer of the worker.
	turns := make(chan struct{}, MaxServing)
	var refused refusals
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		select {
		case turns <- struct{}{}:
		default:
			if err := wire.Respond(nc, m, &wire.SkillReply{Error: busyError}); err != nil {
				log.Warn("skill: refusing a request for a skill body", "err", err)
			}
			refused.add(log)
			return
		}
		go func() {
			defer func() { <-turns }()
			serveOne(nc, m, set, log)
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("skill: subscribing to %s: %w", subject, err)
	}
	// Answering once Serve returns: the server has the subscription.
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("skill: subscribing to %s: %w", subject, err)
	}
	return sub, nil
}

// MaxServing is how many skill requests a worker answers at once.
const MaxServing = 16

// busyError is the answer to a skill request that comes while a worker
// answers MaxServing already.
var busyError = fmt.Sprintf("SkillBusyError: the worker is busy answering %d skill requests (reads that do not end?); ask another worker.", MaxServing)

// refusals counts the requests Serve refused as busy, to log them at
// most once a minute.
type refusals struct {
	mu     sync.Mutex
	n      int       // refused since the last log line
	logged time.Time // when last logged
}

func (r *refusals) add(log *slog.Logger) {
	r.mu.Lock()
	r.n++
	now := time.Now()
	n := r.n
	if now.Sub(r.logged) < time.Minute {
		r.mu.Unlock()
		return
	}
	r.n, r.logged = 0, now
	r.mu.Unlock()
	log.Warn("skill: refused skill requests, every serving turn being held (skill files that do not answer?)", "refused", n, "serving", MaxServing)
}

// serveOne answers one skill request.
func serveOne(nc *nats.Conn, m *nats.Msg, set Bodies, log *slog.Logger) {
	var req wire.SkillRequest
	var reply wire.SkillReply
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil || req.Name == "" {
		reply.Error = `invalid request: want {"name": NAME, "group": GROUP}`
	} else {
		reply = answer(set, &req)
	}
	err := wire.RespondFitting(nc, m, &reply, func(max int64) wire.Message {
		return &wire.SkillReply{Error: fmt.Sprintf("SkillFileTooLargeError: the answer for skill '%s' is larger than the NATS maximum payload (%d bytes).", shownName(req.Name), max)}
	})
	if err != nil {
		log.Warn("skill: answering a request for a skill body", "skill", shownName(req.Name), "err", err)
	}
}

// answer is a worker's reply to a request for one of its skills.
func answer(set Bodies, req *wire.SkillRequest) wire.SkillReply {
	var all []Skill
	if s, ok := set.(*Set); ok {
		all = s.inGroup(req.Group) // no copies: the answer keeps no Metadata
	} else {
		all = set.InGroup(cmp.Or(req.Group, toolkit.BasicGroup))
	}
	i := slices.IndexFunc(all, func(s Skill) bool { return s.Name == req.Name })
	if i < 0 {
		return wire.SkillReply{Error: fmt.Sprintf("SkillNotFoundError: Skill '%s' not found.", shownName(req.Name))}
	}
	s := all[i]
	switch {
	case req.ListFiles:
		files, truncated, err := s.Files()
		if err != nil {
			return wire.SkillReply{Error: err.Error()}
		}
		return wire.SkillReply{Files: files, Truncated: truncated}
	case req.File != "":
		r, err := s.ReadFile(req.File)
		if err != nil {
			return wire.SkillReply{Error: err.Error()}
		}
		return r
	}
	return wire.SkillReply{Markdown: s.Markdown}
}

// Fetch asks the instances in turn for a skill's body and returns the
// first answer.
func Fetch(ctx context.Context, nc *nats.Conn, instances []string, name, group string) (string, error) {
	r, err := ask(ctx, nc, instances, &wire.SkillRequest{Name: name, Group: group})
	return r.Markdown, err
}

// FetchFiles asks the instances in turn for the list of a skill's files
// (Skill.Files).
func FetchFiles(ctx context.Context, nc *nats.Conn, instances []string, name, group string) (files []string, truncated bool, err error) {
	r, err := ask(ctx, nc, instances, &wire.SkillRequest{Name: name, Group: group, ListFiles: true})
	return r.Files, r.Truncated, err
}

// FetchFile asks the instances in turn for one of a skill's files
// (Skill.ReadFile): the reply's Text or Blob, and MIMEType.
func FetchFile(ctx context.Context, nc *nats.Conn, instances []string, name, group, file string) (wire.SkillReply, error) {
	return ask(ctx, nc, instances, &wire.SkillRequest{Name: name, Group: group, File: file})
}

// AskWait bounds the wait for one instance's answer, and AskHedge is how
// long the next instance declaring the skill waits before it is asked too:
// an instance that does not answer (frozen, cut off) delays a fetch by
// AskHedge, not by the caller's whole context.
const (
	AskWait  = 10 * time.Second
	AskHedge = time.Second
)

// ask asks the instances in turn for r and returns the first answer that
// is not an error: the next is asked when one answers with an error, or
// has not answered within AskHedge (the earlier ones still count).
func ask(ctx context.Context, nc *nats.Conn, instances []string, r *wire.SkillRequest) (_ wire.SkillReply, err error) {
	what := "skill.fetch "
	if r.ListFiles || r.File != "" {
		what = "skill.files "
	}
	ctx, span := tracer().Start(ctx, what+r.Name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("toolbus.skill.name", r.Name), attribute.String("toolbus.skill.group", r.Group)))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	if len(instances) == 0 {
		return wire.SkillReply{}, fmt.Errorf("skill: no instance declares skill %q", r.Name)
	}
	req, err := wire.Msgpack.Marshal(r)
	if err != nil {
		return wire.SkillReply{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the requests still out
	type answer struct {
		reply wire.SkillReply
		err   error
	}
	answers := make(chan answer, len(instances))
	asked := 0
	askNext := func() {
		id := instances[asked]
		asked++
		go func() {
			actx, cancel := context.WithTimeout(ctx, AskWait)
			defer cancel()
			var a answer
			m, err := nc.RequestWithContext(actx, wire.SkillSubject(id), req)
			switch {
			case err != nil:
				a.err = fmt.Errorf("%s: %w", id, err)
			default:
				if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &a.reply); err != nil {
					a.err = fmt.Errorf("%s: undecodable reply: %w", id, err)
				} else if a.reply.Error != "" {
					a.err = fmt.Errorf("%s: %s", id, a.reply.Error)
				}
			}
			answers <- a
		}()
	}
	hedge := time.NewTimer(AskHedge)
	defer hedge.Stop()
	askNext()
	var errs []error
	for waiting := 1; waiting > 0; {
		select {
		case a := <-answers:
			waiting--
			if a.err == nil {
				return a.reply, nil
			}
			errs = append(errs, a.err)
		case <-hedge.C: // no answer yet: the next is asked too
		}
		if asked < len(instances) {
			askNext()
			waiting++
			hedge.Reset(AskHedge)
		}
	}
	return wire.SkillReply{}, fmt.Errorf("skill: fetching skill %q: %w", r.Name, errors.Join(errs...))
}
