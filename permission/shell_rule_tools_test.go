package permission

import "testing"

// TestDenyRuleSeesToolSubcommands: the global options of npm, pnpm,
// yarn, docker, podman, kubectl, helm, cargo, pip, terraform and gh may
// stand before the subcommand (npm --loglevel silent publish, docker
// --context x rm c, kubectl -n ns delete pod p, cargo +nightly publish),
// which then runs as it does without them, but a deny or ask rule on
// "npm publish" matched only the words as written, so bypass mode ran
// it. An option not known here may take the next word as its value or
// not: both readings are read.
func TestDenyRuleSeesToolSubcommands(t *testing.T) {
	p := Policy{Mode: ModeBypass, Rules: []Rule{
		rule(t, "execute_shell_command:npm publish:*", Deny),
		rule(t, "execute_shell_command:pnpm publish:*", Deny),
		rule(t, "execute_shell_command:yarn publish:*", Deny),
		rule(t, "execute_shell_command:docker rm:*", Deny),
		rule(t, "execute_shell_command:podman rm:*", Deny),
		rule(t, "execute_shell_command:kubectl delete:*", Deny),
		rule(t, "execute_shell_command:helm uninstall:*", Deny),
		rule(t, "execute_shell_command:cargo publish:*", Deny),
		rule(t, "execute_shell_command:pip install:*", Ask),
		rule(t, "execute_shell_command:pip3 install:*", Ask),
		rule(t, "execute_shell_command:terraform destroy:*", Ask),
		rule(t, "execute_shell_command:gh repo delete:*", Ask),
		rule(t, "execute_shell_command:npm test:*", Allow),
	}}
	for c, want := range map[string]Behavior{
		"npm --loglevel silent publish":               Deny,
		"npm --loglevel=silent publish":               Deny,
		"npm -s publish":                              Deny,
		"npm --registry https://r.example publish":    Deny,
		"npm --some-new-option value publish":         Deny, // unknown: both readings
		"npm --some-new-flag publish":                 Deny,
		"sudo npm --prefix /srv publish":              Deny,
		"/usr/bin/npm --loglevel silent publish":      Deny,
		"pnpm -C pkg publish":                         Deny,
		"pnpm --filter app publish":                   Deny,
		"yarn --cwd pkg publish":                      Deny,
		"docker --context x rm c":                     Deny,
		"docker -H tcp://h:2375 rm -f c":              Deny,
		"docker --log-level debug --tls rm c":         Deny,
		"podman --connection h rm c":                  Deny,
		"podman --root /var/x rm c":                   Deny,
		"kubectl -n ns delete pod p":                  Deny,
		"kubectl -nns delete pod p":                   Deny,
		"kubectl --namespace ns --context c delete x": Deny,
		"kubectl --kubeconfig k -v 9 delete ns x":     Deny,
		"helm -n ns uninstall r":                      Deny,
		"helm --kube-context c uninstall r":           Deny,
		"cargo +nightly publish":                      Deny,
		"cargo -C sub --locked publish":               Deny,
		"cargo --config k=v -Z unstable publish":      Deny,
		"pip --quiet install x":                       Ask,
		"pip --cache-dir /tmp/c install x":            Ask,
		"pip3 --proxy http://p:1 install x":           Ask,
		"terraform -chdir=infra destroy":              Ask,
		"gh -R o/r repo delete":                       Ask,
		"gh --repo o/r repo delete":                   Ask,
		// Unchanged: what the rules do not name.
		"npm --loglevel silent test": Allow,
		"npm test":                   Allow,
		"docker --context x ps":      Allow,
		"kubectl -n ns get pods":     Allow,
		"cargo +nightly build":       Allow,
		"pip --quiet list":           Allow,
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != want {
			t.Errorf("%q: %s (%s), want %s", c, d.Behavior, d.Reason, want)
		}
	}
	// Allow rules cover the words as written: an option before the
	// subcommand is not allowed by "npm test:*".
	a := Policy{Mode: ModeDefault, Rules: []Rule{rule(t, "execute_shell_command:npm test:*", Allow)}}
	if d := Decide(a, shell, cmd("npm --loglevel silent test")); d.Behavior == Allow {
		t.Errorf("allow npm test:*, npm --loglevel silent test: %s (%s), want no allow", d.Behavior, d.Reason)
	}
	if d := Decide(a, shell, cmd("npm test")); d.Behavior != Allow {
		t.Errorf("allow npm test:*, npm test: %s (%s), want allow", d.Behavior, d.Reason)
	}
}
