package skill

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// DefaultInstructionTemplate renders the skill instructions exactly as
// AgentScope 2.x's default template does (no trailing newline). It
// receives InstructionData.
const DefaultInstructionTemplate = `<agent-skills>
Skills are a collection of instructions, scripts, and resources to extend your capabilities.

**IMPORTANT**: Skills are NOT tools, and you cannot call a skill directly. To use a skill, you MUST use the ` + "`{{.SkillViewer}}`" + ` tool to read the skill's full instructions, and then follow those instructions to use the tools and resources provided by the skill.

# Available Skills:{{range .Skills}}
<skill>
<name>{{.Name}}</name>
<description>{{.Description}}</description>
<dir>{{.Dir}}</dir>
</skill>{{end}}
</agent-skills>`

// InstructionData is what an instruction template receives.
type InstructionData struct {
	Skills      []Skill // never empty: no skills render nothing
	SkillViewer string  // the viewer tool's name, ViewerName
}

var defaultTmpl = template.Must(template.New("skills").Parse(DefaultInstructionTemplate))

// Render renders skills with DefaultInstructionTemplate; no skills render
// "". Clients that receive skills from workers use it to build the prompt.
func Render(skills []Skill) string {
	s, _ := render(defaultTmpl, skills)
	return s
}

func render(t *template.Template, skills []Skill) (string, error) {
	if len(skills) == 0 {
		return "", nil
	}
	var b strings.Builder
	if err := t.Execute(&b, InstructionData{Skills: skills, SkillViewer: ViewerName}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Source provides skills; Loader and Static are sources.
type Source interface {
	Load() ([]Skill, []Warning)
}

// Options configure a Set. A nil *Options means the defaults.
type Options struct {
	// InstructionTemplate overrides DefaultInstructionTemplate (text/template
	// syntax, receiving InstructionData). It is checked by NewSet.
	InstructionTemplate string
	// Logger receives duplicate-name and template warnings; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Set is the skills a toolkit offers, each source attached to a tool group
// ("basic", always active, or a named group). It answers which skills a
// session sees for its active groups: basic first, then the active groups
// in group order (the toolkit's order once Install has bound it, otherwise
// the order groups were first added), each group's sources in the order
// they were added. When two visible skills share a name the later one
// replaces the earlier, keeping the earlier's position, with a warning.
//
// Sources are read on every query, so a Loader's reloads show at once. A
// Set is safe for concurrent use.
type Set struct {
	tmpl *template.Template
	log  *slog.Logger
	wait waitFor // LoadWait and FirstLoadWait as they were when it was made

	mu      sync.Mutex
	groups  []string // first-seen order, basic first when present
	sources map[string][]source
	added   int             // sources added so far: the next one's seq
	order   func() []string // the toolkit's group order, once bound
	dupes   map[string]bool // duplicate warnings already logged
	removed map[string]int  // skill name → the sources Remove hid it from: seq below this

	withSkills latest[[]string] // GroupsWithSkills' last answer
}

// source is a Source as added, numbered in the order of adding.
type source struct {
	Source
	seq int
}

// NewSet returns an empty Set. It fails only for a bad template.
func NewSet(opts *Options) (*Set, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Set{tmpl: defaultTmpl, log: opts.Logger, sources: map[string][]source{}, dupes: map[string]bool{}, removed: map[string]int{},
		wait: waitFor{loadWait, firstLoadWait}}
	if s.log == nil {
		s.log = slog.Default()
	}
	if opts.InstructionTemplate != "" {
		t, err := ParseTemplate(opts.InstructionTemplate)
		if err != nil {
			return nil, err
		}
		s.tmpl = t
	}
	return s, nil
}

// ParseTemplate checks an instruction template: it must parse and render a
// sample skill.
func ParseTemplate(src string) (*template.Template, error) {
	t, err := template.New("skills").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("skill: instruction template: %w", err)
	}
	sample := []Skill{{Name: "sample", Description: "A sample skill.", Dir: "/skills/sample", Group: toolkit.BasicGroup}}
	if _, err := render(t, sample); err != nil {
		return nil, fmt.Errorf("skill: instruction template: %w", err)
	}
	return t, nil
}

// Add attaches a source to a group; "" means "basic". The group name must be
// a valid tool group name (Install checks that it exists in the toolkit).
func (s *Set) Add(group string, src Source) error {
	if group == "" {
		group = toolkit.BasicGroup
	}
	if !toolkit.ValidName(group) {
		return fmt.Errorf("skill: invalid group name %q", group)
	}
	if src == nil {
		return fmt.Errorf("skill: nil source for group %q", group)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sources[group]; !ok {
		s.groups = append(s.groups, group)
	}
	s.sources[group] = append(s.sources[group], source{src, s.added})
	s.added++
	return nil
}

// AddDir attaches a Loader for dir to a group and returns it.
func (s *Set) AddDir(group, dir string, opts *LoaderOptions) (*Loader, error) {
	if opts == nil {
		opts = &LoaderOptions{}
	}
	if opts.Logger == nil {
		o := *opts
		o.Logger = s.log
		opts = &o
	}
	l := NewLoader(dir, opts)
	if err := s.Add(group, l); err != nil {
		return nil, err
	}
	return l, nil
}

// Groups returns the groups that have sources, basic first.
func (s *Set) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groupOrder()
}

// groupOrder: basic, then the bound toolkit's order, then the rest.
func (s *Set) groupOrder() []string {
	out := make([]string, 0, len(s.groups))
	if _, ok := s.sources[toolkit.BasicGroup]; ok {
		out = append(out, toolkit.BasicGroup)
	}
	if s.order != nil {
		for _, g := range s.order() {
			if _, ok := s.sources[g]; ok && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	for _, g := range s.groups {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// GroupsWithSkills returns the groups that hold a skill now ("basic" for
// basic's), in group order: the Skill tool is listed while one of them is
// basic or active (toolkit.ListedWith; Install registers it so). Every
// listing of the toolkit's tools asks (its announcement too), so it
// waits AnnounceWait at most for the sources: past it, it returns the
// groups the last read found, with a warning (again every minute while
// the read goes on, with how long it has been going).
func (s *Set) GroupsWithSkills() []string {
	read := func() []string {
		var out []string
		for _, sk := range s.collect(func(string) bool { return true }, false) {
			if !slices.Contains(out, sk.Group) {
				out = append(out, sk.Group)
			}
		}
		return out
	}
	late := func(going time.Duration) {
		s.log.Warn("skill: reading the skills takes over a listing's wait (a skills source that does not answer?): listing the Skill tool with the groups last read", "wait", AnnounceWait, "stuck_for", going.Round(time.Second))
	}
	groups, _ := s.withSkills.get(read, firstWait(&s.withSkills, AnnounceWait, s.wait.first), late)
	return slices.Clone(groups)
}

// Available returns the skills visible with the given active groups: those
// of "basic" and of every active group. nil or empty means only basic.
// The skills are copies, their Metadata included.
func (s *Set) Available(active []string) []Skill {
	return clones(s.available(active))
}

func (s *Set) available(active []string) []Skill {
	return s.collect(func(g string) bool { return g == toolkit.BasicGroup || slices.Contains(active, g) }, true)
}

// All returns the skills of every group, copies, their Metadata included.
func (s *Set) All() []Skill {
	return clones(s.all())
}

func (s *Set) all() []Skill {
	return s.collect(func(string) bool { return true }, true)
}

// InGroup returns the skills of one group ("" means basic), a later one
// of a name replacing the earlier in its position; copies, their
// Metadata included.
func (s *Set) InGroup(group string) []Skill {
	return clones(s.inGroup(group))
}

func (s *Set) inGroup(group string) []Skill {
	group = cmp.Or(group, toolkit.BasicGroup)
	return s.collect(func(g string) bool { return g == group }, true)
}

// Find returns the visible skill with the given name, a copy, its
// Metadata included.
func (s *Set) Find(name string, active []string) (Skill, bool) {
	for _, sk := range s.available(active) {
		if sk.Name == name {
			return sk.clone(), true
		}
	}
	return Skill{}, false
}

// clones copies skills down to their Metadata, for a caller out of the
// package: the skills collect returns have their sources' Metadata,
// copied only where they are given out (a copy of every skill's for
// each query cost a second and hundreds of megabytes a query with
// hundreds of skills of large front matter).
func clones(skills []Skill) []Skill {
	for i := range skills {
		skills[i] = skills[i].clone()
	}
	return skills
}

// Remove takes the skill called name out of the set, in every group,
// whatever source declares it (AgentScope's remove_agent_skill); it stays
// out when those sources are read again. A source added after the
// removal shows it again (register_agent_skill after remove_agent_skill).
// An unknown name is logged and reported false.
func (s *Set) Remove(name string) bool {
	known := slices.ContainsFunc(s.collect(func(string) bool { return true }, false), func(sk Skill) bool { return sk.Name == name })
	if !known {
		s.log.Warn("skill: no skill to remove", "skill", name)
		return false
	}
	s.mu.Lock()
	s.removed[name] = s.added
	s.mu.Unlock()
	return true
}

// collect loads the skills of the groups visible says are, with their
// sources' Metadata, which the caller does not change, nor give out.
func (s *Set) collect(visible func(group string) bool, dedupe bool) []Skill {
	s.mu.Lock()
	groups := s.groupOrder()
	sources := make(map[string][]source, len(groups))
	for _, g := range groups {
		sources[g] = slices.Clone(s.sources[g])
	}
	removed := maps.Clone(s.removed)
	s.mu.Unlock()

	var out []Skill
	index := map[string]int{}
	w := s.wait.from(time.Now())
	for _, g := range groups {
		if visible(g) {
			for _, src := range sources[g] {
				begin(src)
			}
		}
	}
	for _, g := range groups {
		if !visible(g) {
			continue
		}
		for _, src := range sources[g] {
			skills, _ := loadBy(src, w)
			for _, sk := range skills {
				if src.seq < removed[sk.Name] {
					continue
				}
				sk.Group = g
				if i, ok := index[sk.Name]; ok && dedupe {
					s.warnDuplicate(out[i], sk)
					out[i] = sk
					continue
				}
				index[sk.Name] = len(out)
				out = append(out, sk)
			}
		}
	}
	return out
}

// loadBy loads src, a Loader waiting as w says: a set with several
// loaders on stuck directories waits LoadWait in all (FirstLoadWait
// before their first reads), not that for each; begin has started their
// reads together.
func loadBy(src Source, w waits) ([]Skill, []Warning) {
	if l := loader(src); l != nil {
		return l.loadBy(w)
	}
	return src.Load()
}

// begin starts a read of src when it is a Loader (Loader.begin).
func begin(src Source) {
	if l := loader(src); l != nil {
		l.begin()
	}
}

// loader is src as a Loader; nil when it is another Source.
func loader(src Source) *Loader {
	if s, ok := src.(source); ok {
		src = s.Source
	}
	l, _ := src.(*Loader)
	return l
}

// maxDupes is how many duplicate warnings a set remembers having logged
// (a variable for tests): past it, it forgets them, and warns of the
// duplicates it meets again once more. Each is a name and two
// directories, and a skills directory whose folders keep new names would
// grow them for the worker's life.
var maxDupes = 1000

func (s *Set) warnDuplicate(old, repl Skill) {
	key := old.Name + "\x00" + old.Dir + "\x00" + repl.Dir
	s.mu.Lock()
	seen := s.dupes[key]
	if !seen && len(s.dupes) >= maxDupes {
		clear(s.dupes)
	}
	s.dupes[key] = true
	s.mu.Unlock()
	if !seen {
		s.log.Warn("skill: duplicate skill name, the later one replaces the earlier", "skill", old.Name, "replaced", old.Dir, "by", repl.Dir)
	}
}

// Warnings loads every source and returns every skipped skill (for a
// configuration check).
func (s *Set) Warnings() []Warning {
	s.mu.Lock()
	var all []Source
	for _, g := range s.groupOrder() {
		for _, src := range s.sources[g] {
			all = append(all, src)
		}
	}
	s.mu.Unlock()
	var out []Warning
	w := s.wait.from(time.Now())
	for _, src := range all {
		begin(src)
	}
	for _, src := range all {
		_, warns := loadBy(src, w)
		out = append(out, warns...)
	}
	return out
}

// Instructions renders the prompt that lists the skills visible with the
// given active groups; "" when there are none. As AgentScope 2.x's
// groups=None, nil means every group's skills; an empty slice means basic
// only (a session with no active group: see the package's Instructions,
// which passes a session's groups).
func (s *Set) Instructions(active []string) string {
	if active == nil {
		return s.Render(s.all())
	}
	return s.Render(s.available(active))
}

// Render renders skills with the set's template; "" when there are none.
// A template that fails at run time (it passed ParseTemplate) is logged
// and renders "".
func (s *Set) Render(skills []Skill) string {
	out, err := render(s.tmpl, skills)
	if err != nil {
		s.log.Error("skill: rendering the skill instructions", "err", err)
		return ""
	}
	return out
}

// Catalog returns every skill of every group, duplicates included,
// without their bodies and front matter: what a worker announces so clients can render instructions
// (with Visible and Render) without the files.
func (s *Set) Catalog() []Skill {
	all := s.collect(func(string) bool { return true }, false)
	for i := range all {
		all[i].Markdown = ""
		all[i].Metadata = nil
	}
	return all
}

// Visible filters a catalog (skills with their Group set, in group order)
// to those of "basic" and the active groups, applying the same duplicate
// rule as Set: a later skill with the same name replaces the earlier one
// in its position.
func Visible(catalog []Skill, active []string) []Skill {
	return visible(catalog, func(g string) bool { return g == "" || g == toolkit.BasicGroup || slices.Contains(active, g) })
}

// visible is Visible for the groups seen says are visible.
func visible(catalog []Skill, seen func(group string) bool) []Skill {
	var out []Skill
	index := map[string]int{}
	for _, sk := range catalog {
		if !seen(sk.Group) {
			continue
		}
		if i, ok := index[sk.Name]; ok {
			out[i] = sk
			continue
		}
		index[sk.Name] = len(out)
		out = append(out, sk)
	}
	return out
}
