package permission

import "testing"

// TestSafetySeesHereDocumentScriptWrites: "bash -c 'echo x >
// ~/.bashrc'" was a safety ask but "bash <<EOF … echo x > ~/.bashrc …
// EOF" and "bash <<< 'sort -o ~/.bashrc x'" were not, and "*" allowed
// them, though the shell runs the body as its script; on a line that
// runs a shell, a write of the body's commands to a dangerous path is
// now a safety ask, as on the line. A body no shell runs is text.
func TestSafetySeesHereDocumentScriptWrites(t *testing.T) {
	p := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{"/srv/app"}}
	for _, line := range []string{
		"bash <<EOF\necho x > ~/.bashrc\nEOF",
		"bash <<< 'sort -o ~/.bashrc x'",
		"sh <<'EOF'\nls\ncp k ~/.ssh/authorized_keys\nEOF",
		"sudo bash <<< 'tee -a /etc/hosts < h'",
		"bash <<< 'sudo sh -c \"echo x >> ~/.profile\"'",
		"bash <<< 'cd /var && echo x > lib/dpkg/status'",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"cat <<EOF > notes.txt\necho x > ~/.bashrc\nEOF",
		"bash <<< 'echo x > out.txt'",
		"bash <<EOF\ncat ~/.bashrc\nEOF",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
