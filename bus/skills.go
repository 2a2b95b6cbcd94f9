package bus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// AnnouncedSkill is a skill as a worker announces it: what a client needs
// to list it in the <agent-skills> prompt. The body stays on the worker;
// the model reads it with the Skill viewer tool, which any worker that
// declares the skill serves.
type AnnouncedSkill struct {
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description" msgpack:"description"`
	// Group is "basic" or one of the announcement's groups.
	Group string `json:"group" msgpack:"group"`
	// Dir is the skill's directory on the worker's machine.
	Dir string `json:"dir" msgpack:"dir"`
}

// SkillCatalog provides the skills a worker announces (AnnouncerConfig.
// Skills). *skill.Set implements it.
type SkillCatalog interface {
	// Catalog returns every skill with its Group set, in group order.
	Catalog() []skill.Skill
}

// announcedSkills converts a catalog, leaving out skills of groups the
// announcement does not carry.
func announcedSkills(c SkillCatalog, groups map[string]bool) []AnnouncedSkill {
	var out []AnnouncedSkill
	for _, s := range c.Catalog() {
		g := s.Group
		if g == "" {
			g = toolkit.BasicGroup
		}
		if !groups[g] {
			continue
		}
		out = append(out, AnnouncedSkill{Name: s.Name, Description: s.Description, Group: g, Dir: s.Dir})
	}
	return out
}

// mergeSkills merges the instances' skills: basic first, then the groups
// in merged order; within a group, instances in id order and each one's
// skills in its order. An identical skill announced by several instances
// is kept once. Skills of groups the fleet does not know are left out.
// f.mu is held.
func (f *Fleet) mergeSkills(groups []toolkit.Group) []skill.Skill {
	order := []string{toolkit.BasicGroup}
	for _, g := range groups {
		order = append(order, g.Name)
	}
	byGroup := map[string][]skill.Skill{}
	seen := map[AnnouncedSkill]bool{}
	for _, id := range slices.Sorted(maps.Keys(f.instances)) {
		for _, s := range f.instances[id].ann.Skills {
			switch {
			case seen[s]:
				continue
			case s.Name == "" || !slices.Contains(order, s.Group):
				f.log.Warn("bus: fleet: ignoring an announced skill", "instance", id, "skill", s.Name, "group", s.Group)
				continue
			}
			seen[s] = true
			byGroup[s.Group] = append(byGroup[s.Group], skill.Skill{Name: s.Name, Description: s.Description, Dir: s.Dir, Group: s.Group})
		}
	}
	var out []skill.Skill
	for _, g := range order {
		out = append(out, byGroup[g]...)
	}
	return out
}

// Skills returns the fleet's skills (without bodies), basic first, then
// in the order of Groups.
func (f *Fleet) Skills() []skill.Skill { return slices.Clone(f.view.Load().skills) }

// SkillInstructions renders the <agent-skills> prompt for a session: the
// skills of basic and of the session's active groups (read from state, at
// least minRevision; the groups announced active when the session has no
// state), with skill.DefaultInstructionTemplate. It is "" when no skill is
// visible. A worker's own template override is not announced: the fleet
// always renders the default.
func (f *Fleet) SkillInstructions(ctx context.Context, state toolkit.GroupState, session string, minRevision uint64) (string, error) {
	v := f.view.Load()
	groups, _, ok, err := state.Load(ctx, session, minRevision)
	if err != nil {
		return "", err
	}
	if !ok {
		groups = nil
		for _, g := range v.groups {
			if g.Active {
				groups = append(groups, g.Name)
			}
		}
	}
	return skill.Render(skill.Visible(v.skills, groups)), nil
}

func (p *AnnouncedPermissions) clone() *AnnouncedPermissions {
	if p == nil {
		return nil
	}
	c := *p
	c.Allow, c.Deny, c.Ask = slices.Clone(p.Allow), slices.Clone(p.Deny), slices.Clone(p.Ask)
	return &c
}

// SubjectSkill is the prefix of the subject on which a worker serves the
// bodies of the skills it declares: tools.skill.<instance> (plain
// subscription, request/reply, JSON). It lets a worker's Skill tool answer
// for a skill whose files live on another worker.
const SubjectSkill = "tools.skill"

// SkillRequest asks a worker for the body of one of its skills.
type SkillRequest struct {
	Name  string `json:"name"`
	Group string `json:"group"`
}

// SkillReply is the answer to a SkillRequest: the markdown body, or why
// there is none.
type SkillReply struct {
	Markdown string `json:"markdown,omitempty"`
	Error    string `json:"error,omitempty"`
}

// SkillBodies provides skill bodies by name and group; *skill.Set is one
// (its All method).
type SkillBodies interface {
	All() []skill.Skill
}

// ServeSkills answers SkillRequests on tools.skill.<instance> from set.
// Unsubscribe the returned subscription to stop.
func ServeSkills(nc *nats.Conn, instance string, set SkillBodies) (*nats.Subscription, error) {
	if !toolkit.ValidName(instance) {
		return nil, fmt.Errorf("bus: ServeSkills: invalid instance id %q", instance)
	}
	subject := SubjectSkill + "." + instance
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var req SkillRequest
		var reply SkillReply
		if err := json.Unmarshal(m.Data, &req); err != nil || req.Name == "" {
			reply.Error = `invalid request: want JSON {"name": NAME, "group": GROUP}`
		} else {
			reply.Error = fmt.Sprintf("SkillNotFoundError: Skill '%s' not found.", req.Name)
			for _, s := range set.All() {
				if s.Name == req.Name && s.Group == cmp.Or(req.Group, toolkit.BasicGroup) {
					reply = SkillReply{Markdown: s.Markdown}
				}
			}
		}
		b, _ := json.Marshal(reply)
		m.Respond(b)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribing to %s: %w", subject, err)
	}
	return sub, nil
}

// FetchSkill asks the instances in turn for a skill's body and returns the
// first answer.
func FetchSkill(ctx context.Context, nc *nats.Conn, instances []string, name, group string) (string, error) {
	req, _ := json.Marshal(SkillRequest{Name: name, Group: group})
	var errs []error
	for _, id := range instances {
		m, err := nc.RequestWithContext(ctx, SubjectSkill+"."+id, req)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		var reply SkillReply
		if err := json.Unmarshal(m.Data, &reply); err != nil {
			errs = append(errs, fmt.Errorf("%s: undecodable reply: %w", id, err))
			continue
		}
		if reply.Error != "" {
			errs = append(errs, fmt.Errorf("%s: %s", id, reply.Error))
			continue
		}
		return reply.Markdown, nil
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("bus: no instance declares skill %q", name)
	}
	return "", fmt.Errorf("bus: fetching skill %q: %w", name, errors.Join(errs...))
}

// SkillSources finds the skill a session with the active groups sees
// under name, and the instances that declare it (sorted).
func (f *Fleet) SkillSources(name string, active []string) (group string, instances []string, ok bool) {
	var sk skill.Skill
	for _, s := range skill.Visible(f.view.Load().skills, active) {
		if s.Name == name {
			sk, ok = s, true
		}
	}
	if !ok {
		return "", nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, in := range f.instances {
		if slices.ContainsFunc(in.ann.Skills, func(a AnnouncedSkill) bool { return a.Name == sk.Name && a.Group == sk.Group }) {
			instances = append(instances, id)
		}
	}
	slices.Sort(instances)
	return sk.Group, instances, len(instances) > 0
}
