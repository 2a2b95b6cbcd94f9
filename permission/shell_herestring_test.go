package permission

import "testing"

// TestDenyRuleSeesHereStrings: a here-string is read as a script as a
// here-document's body is (bash <<< 'rm x' runs rm), for deny and ask
// rules and the removal check.
func TestDenyRuleSeesHereStrings(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{"bash <<< 'rm -rf x'", "sh <<<\"ls; rm -rf x\"", "sudo bash <<<'rm -rf x'"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(Policy{}, shell, cmd("bash <<< 'rm -rf ~'")); d.Behavior != Ask || !d.Safety {
		t.Errorf("bash <<< 'rm -rf ~': %s (%s), want a safety ask", d.Behavior, d.Reason)
	}
	if d := Decide(deny, shell, cmd("grep x <<< 'some text'")); d.Behavior != Allow {
		t.Errorf("deny rm:*, grep x <<< 'some text': %s (%s), want allow", d.Behavior, d.Reason)
	}
}
