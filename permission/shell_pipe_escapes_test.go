package permission

import (
	"slices"
	"testing"
)

// TestPipedScriptEscapes: the text echo and printf write to a shell is
// read with the escapes they read: echo -e (and dash's echo) read octal
// only as \0NNN ("\101" stays as written), printf's format as \NNN, and
// \c ends the output.
func TestPipedScriptEscapes(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{`echo -e 'rm x\101'`, []string{`rm x\101`}},
		{`echo 'rm x\0101'`, []string{`rm x\0101`, "rm xA"}},
		{`printf 'rm x\101\n'`, []string{"rm xA\n"}},
		{`printf '%b' 'rm\tx\0101\cls'`, []string{"rm\txA"}},
		{`printf 'a\x41%%\n'`, []string{"aA%\n"}},
	} {
		l, err := parseShell(c.line)
		if err != nil || len(l.cmds) != 1 {
			t.Fatalf("%q: %v, %d commands", c.line, err, len(l.cmds))
		}
		got, opaque := writtenText(l.cmds[0])
		if opaque || !slices.Equal(got, c.want) {
			t.Errorf("%q writes %q (opaque %v), want %q", c.line, got, opaque, c.want)
		}
	}
}
