package bus

import (
	"context"
	"maps"
	"slices"

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
