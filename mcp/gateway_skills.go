package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/skill"
)

// Skills through the gateway. Each skill a session sees (those of basic
// and its active groups, announced by the fleet's workers) is an MCP
// prompt named after the skill, whose messages are the skill's
// instructions (its SKILL.md), and a resource skill://<name>/SKILL.md
// (text/markdown) with the same text. Both are read from a worker that
// declares the skill (skill.Fetch) when asked for, and follow the
// session's groups as its tools do (prompts and resources list_changed).
// The other files of the skill's directory (scripts, references) are
// resources skill://<name>/<path> too: resources/list asks a worker
// declaring the skill for their list (skill.FetchFiles, within the limits
// of skill.Files), and resources/read for the file (text, or a blob).

// skillURI is the resource URI of a skill's SKILL.md.
func skillURI(name string) string {
	return skillFileURI(name, skill.FileName)
}

// skillFileURI is the resource URI of a file of a skill (a slash-separated
// path within its directory): skill://<name>/<path> when the name can be
// a URI's host as it is (pdf, data-report, résumé), otherwise
// skill:///<name>/<path> with the name a path segment, escaped. A skill's
// name is any text its front matter gives, and a URI that url.Parse
// refuses makes the go-sdk's AddResource panic; "a@b" as a host would
// read as skill "b".
func skillFileURI(name, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	host := url.PathEscape(name)
	if u, err := url.Parse("skill://" + host + "/"); err != nil || u.Host != name || u.User != nil {
		host = "/" + host
	}
	return "skill://" + host + "/" + strings.Join(parts, "/")
}

// parseSkillURI is the skill and file a URI of skillFileURI names.
func parseSkillURI(uri string) (name, file string, ok bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "skill" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", false
	}
	if u.Host != "" {
		name, file = u.Host, strings.TrimPrefix(u.Path, "/")
	} else {
		// The name is the first segment, escaped: it may hold a "/".
		seg, rest, found := strings.Cut(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
		if !found {
			return "", "", false
		}
		if name, err = url.PathUnescape(seg); err != nil {
			return "", "", false
		}
		if file, err = url.PathUnescape(rest); err != nil {
			return "", "", false
		}
	}
	return name, file, name != "" && file != ""
}

// refreshSkills makes the session's server hold the prompts and resources
// of the skills visible with active; s.mu is held.
func (s *gatewaySession) refreshSkills(active []string) {
	g := s.g
	visible := skill.Visible(skill.FleetSkills(g.fleet, g.log), active)
	want := make(map[string]skill.Skill, len(visible))
	for _, sk := range visible {
		want[sk.Name] = sk
	}
	var gonePrompts, goneURIs []string
	for name := range s.skills {
		if _, ok := want[name]; !ok {
			gonePrompts = append(gonePrompts, name)
			goneURIs = append(goneURIs, skillURI(name))
			delete(s.skills, name)
		}
	}
	if len(gonePrompts) > 0 {
		s.srv.RemovePrompts(gonePrompts...)
		s.srv.RemoveResources(goneURIs...)
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sk := want[name]
		b, _ := json.Marshal([]string{sk.Description, sk.Group})
		if s.skills[name] == string(b) {
			continue
		}
		s.skills[name] = string(b)
		s.srv.AddPrompt(&sdk.Prompt{Name: name, Description: sk.Description}, s.getPrompt)
		s.srv.AddResource(&sdk.Resource{URI: skillURI(name), Name: name, Description: sk.Description, MIMEType: "text/markdown"}, s.readResource)
	}
}

// skillBody fetches a visible skill's SKILL.md from a worker declaring it.
func (s *gatewaySession) skillBody(ctx context.Context, name string) (string, error) {
	active, err := s.c.ActiveGroups(ctx, s.id, 0)
	if err != nil {
		return "", err
	}
	group, instances, ok := skill.Sources(s.g.fleet, name, active)
	if !ok {
		return "", fmt.Errorf("SkillNotFoundError: Skill '%s' not found.", name)
	}
	return skill.Fetch(ctx, s.g.nc, instances, name, group)
}

func (s *gatewaySession) getPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	body, err := s.skillBody(ctx, req.Params.Name)
	if err != nil {
		return nil, err
	}
	return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: body}}}}, nil
}

func (s *gatewaySession) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	name, file, ok := parseSkillURI(req.Params.URI)
	if !ok || file != skill.FileName {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	body, err := s.skillBody(ctx, name)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: body}}}, nil
}

// skillFileTimeout bounds asking a worker for a skill's files, and
// skillFileFetches how many skills' files are asked for at once.
const (
	skillFileTimeout = 10 * time.Second
	skillFileFetches = 8
)

// skillFiles are the resources of the files of the skills the session
// sees, besides their SKILL.md. A skill whose workers do not answer is
// left out (and logged). The skills are asked for at once, a few at a
// time: one by one, a listing waited skillFileTimeout for each skill of
// a worker that does not answer.
func (s *gatewaySession) skillFiles(ctx context.Context) ([]*sdk.Resource, error) {
	active, err := s.c.ActiveGroups(ctx, s.id, 0)
	if err != nil {
		return nil, err
	}
	sources := skill.VisibleSources(s.g.fleet, active, s.g.log)
	files := make([][]string, len(sources))
	var wg sync.WaitGroup
	turns := make(chan struct{}, skillFileFetches)
	for i, src := range sources {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			fctx, cancel := context.WithTimeout(ctx, skillFileTimeout)
			defer cancel()
			f, _, err := skill.FetchFiles(fctx, s.g.nc, src.Instances, src.Name, src.Group)
			if err != nil {
				s.g.log.Warn("mcp: gateway: listing a skill's files", "skill", src.Name, "err", err)
				return
			}
			files[i] = f
		})
	}
	wg.Wait()
	var out []*sdk.Resource
	for i, src := range sources {
		for _, f := range files[i] {
			out = append(out, &sdk.Resource{URI: skillFileURI(src.Name, f), Name: src.Name + "/" + f, MIMEType: skill.MIMEType(f)})
		}
	}
	return out, nil
}

// readSkillFile reads skill://<name>/<path> from a worker declaring the
// skill, when the session sees it.
func (s *gatewaySession) readSkillFile(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	name, file, ok := parseSkillURI(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	active, err := s.c.ActiveGroups(ctx, s.id, 0)
	if err != nil {
		return nil, err
	}
	group, instances, ok := skill.Sources(s.g.fleet, name, active)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	fctx, cancel := context.WithTimeout(ctx, skillFileTimeout)
	defer cancel()
	r, err := skill.FetchFile(fctx, s.g.nc, instances, name, group, file)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	c := &sdk.ResourceContents{URI: uri, MIMEType: r.MIMEType, Text: r.Text}
	if r.Blob != "" {
		if c.Blob, err = base64.StdEncoding.DecodeString(r.Blob); err != nil {
			return nil, fmt.Errorf("skill file %s: %w", uri, err)
		}
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

// isSkillMD: the URI is a skill's SKILL.md, a resource of the session's
// own server.
func isSkillMD(uri string) bool {
	_, file, ok := parseSkillURI(uri)
	return ok && file == skill.FileName
}
