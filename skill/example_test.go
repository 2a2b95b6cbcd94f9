package skill_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

func Example() {
	dir, _ := os.MkdirTemp("", "skills")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: greet\ndescription: Greet people politely.\n---\nSay hello, then the name.\n"), 0o644)

	tk := toolkit.New(nil)
	set, _ := skill.NewSet(nil)
	_, _ = set.AddDir("", dir, nil)
	if err := skill.Install(tk, set); err != nil {
		panic(err)
	}
	ctx := context.Background()
	r := tk.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: skill.ViewerName, Input: map[string]any{"skill": "greet"}})
	fmt.Println(r.State, r.Text())
	r = tk.Invoke(ctx, toolkit.ToolCall{ID: "c2", Name: skill.ViewerName, Input: map[string]any{"skill": "nope"}})
	fmt.Println(r.State, r.Code, r.Text())
	// Output:
	// success Say hello, then the name.
	// error tool_error SkillNotFoundError: Skill 'nope' not found.
}

func ExampleRender() {
	fmt.Println(skill.Render([]skill.Skill{{Name: "greet", Description: "Greet people politely.", Dir: "/skills/greet"}}))
	// Output:
	// <agent-skills>
	// Skills are a collection of instructions, scripts, and resources to extend your capabilities.
	//
	// **IMPORTANT**: Skills are NOT tools, and you cannot call a skill directly. To use a skill, you MUST use the `Skill` tool to read the skill's full instructions, and then follow those instructions to use the tools and resources provided by the skill.
	//
	// # Available Skills:
	// <skill>
	// <name>greet</name>
	// <description>Greet people politely.</description>
	// <dir>/skills/greet</dir>
	// </skill>
	// </agent-skills>
}
