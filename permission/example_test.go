package permission_test

import (
	"context"
	"fmt"

	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

type DeployIn struct {
	Env string `json:"env"`
}

func Example() {
	ctx := context.Background()
	tk := toolkit.New(nil)
	_ = tk.Add(toolkit.Func("deploy", "Deploy to an environment.",
		func(ctx context.Context, in DeployIn) (string, error) { return "deployed to " + in.Env, nil }))
	guard, _ := permission.NewGuard(permission.NewMemoryStore(), nil)
	tk.Use(permission.Middleware(guard))

	call := toolkit.ToolCall{ID: "c1", Name: "deploy", Session: "s1", Input: map[string]any{"env": "prod"}}
	r := tk.Invoke(ctx, call)
	fmt.Println(r.State, r.Code, r.Metadata[permission.MetaApprovalKey], r.Metadata[permission.MetaSuggestedRules])

	// A human approves the pending call; the agent re-sends it unchanged.
	if _, err := guard.Approve(ctx, "", "c1", "alice"); err != nil {
		panic(err)
	}
	r = tk.Invoke(ctx, call)
	fmt.Println(r.State, r.Text())

	// The approval was consumed; a rule allows the tool from now on.
	_ = guard.Allow(ctx, "s1", "deploy")
	r = tk.Invoke(ctx, call)
	fmt.Println(r.State, r.Text())
	// Output:
	// denied approval_required c1 [deploy]
	// success deployed to prod
	// success deployed to prod
}

func ExampleDecide() {
	shell, _ := toolkit.Describe(&toolkit.Tool{Name: permission.ShellTool}, toolkit.WithKind(toolkit.KindShell))
	for _, c := range []struct {
		mode permission.Mode
		cmd  string
	}{
		{permission.ModeDefault, "git status"},
		{permission.ModeDefault, "npm install"},
		{permission.ModeDefault, "rm -rf /"},
		{permission.ModeExplore, "npm install"},
		{permission.ModeBypass, "npm install"},
		{permission.ModeDontAsk, "npm install"},
		{permission.ModeAcceptEdits, "mkdir -p /srv/app/build"},
	} {
		d := permission.Decide(permission.Policy{Mode: c.mode, WorkingDirs: []string{"/srv/app"}}, shell, map[string]any{"command": c.cmd})
		fmt.Printf("%-12s %-24s %-5s %s\n", c.mode, c.cmd, d.Behavior, d.Reason)
	}
	// Output:
	// default      git status               allow read-only
	// default      npm install              ask   mode
	// default      rm -rf /                 ask   safety check
	// explore      npm install              deny  mode
	// bypass       npm install              allow mode
	// dont_ask     npm install              deny  mode
	// accept_edits mkdir -p /srv/app/build  allow tool check
}
