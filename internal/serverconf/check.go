// Package serverconf reads what toolbus needs of a nats-server
// configuration file with nats-server's parser (package conf) alone, not
// its server package, which a program that only connects does not
// compile in: Check refuses the files nats-server would hang or fill its
// memory on, Listen says where the server it configures listens (for a
// client of that server).
package serverconf

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"

	"github.com/toolbus/toolbus/internal/regularfile"
)

// The files a nats-server configuration includes (include) or names
// (tls cert_file, key_file, ca_file; operator) are read whole by
// nats-server while it parses, and includes are followed without limit:
// a named pipe among them hangs the start, /dev/zero fills memory, and an
// include of itself overflows the stack. checkFiles reads the
// configuration as nats-server's lexer does for these keys and refuses
// such files before nats-server sees them, naming the file; and a file
// nested deeper than maxNesting, naming its line, or whose variables
// make over maxValues values written out.
//
// Check runs before nats-server (package embedded) or Listen reads a
// configuration.
//
// It is a check, not a parser: a key it reads where nats-server would
// not (in a string, say) at worst makes it look at a file that is then
// not read; a file it cannot find is left to nats-server's own error.

const (
	// maxConfigFile bounds each file of a configuration.
	maxConfigFile = 1 << 20
	// maxIncludes bounds the files a configuration includes, in all.
	maxIncludes = 64
	// maxIncludeDepth bounds how deep includes nest.
	maxIncludeDepth = 8
	// maxNesting bounds how deep a file's blocks and arrays ({ and [)
	// nest: nats-server takes the digest of what it read as JSON, whose
	// encoding checks every level again: its cost grows as the square of
	// the depth, and 100000 levels (200 KB) held a worker's start for
	// minutes at full CPU; real ones nest a few.
	maxNesting = 64
	// maxValues bounds the values a configuration holds with its
	// variables ($name) written out, as nats-server's digest of it (JSON)
	// writes them: references that multiply (a billion laughs) filled
	// the memory.
	maxValues = 1 << 20
)

var (
	// includeRE: nats-server's include keyword (any case, after a space,
	// a line start, "{" or a separator) and its value, quoted or not.
	includeRE = regexp.MustCompile(`(?mi)(?:^|[\s{;,])include[ \t]+(?:"([^"\n]*)"|'([^'\n]*)'|([^\s;,}]+))`)
	// fileKeyRE: the keys whose values name files nats-server reads.
	fileKeyRE = regexp.MustCompile(`(?mi)(?:^|[\s{;,])(cert_file|key_file|ca_file|operator)[ \t]*[:=]?[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s;,}\]]+))`)
)

// Check checks file and what it includes and names (see above).
func Check(file string) error {
	c := &fileCheck{seen: map[string]bool{}}
	if err := c.config(file, 0); err != nil {
		return err
	}
	// Parsed, each reference shares the value it names: counted as
	// written out, no further than the bound.
	m, err := conf.ParseFile(file)
	if err != nil {
		return nil // nats-server says what is wrong
	}
	if left := count(m, maxValues); left < 0 {
		return fmt.Errorf("%s: its variables ($name) make over %d values written out, as nats-server writes them: refer to fewer or smaller ones", file, maxValues)
	}
	return nil
}

// count is left less the values under v, stopping once it is below 0.
func count(v any, left int) int {
	if left--; left < 0 {
		return left
	}
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if left = count(e, left); left < 0 {
				return left
			}
		}
	case []any:
		for _, e := range v {
			if left = count(e, left); left < 0 {
				return left
			}
		}
	}
	return left
}

type fileCheck struct {
	seen  map[string]bool
	count int
}

func (c *fileCheck) config(file string, depth int) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	switch {
	case c.seen[abs]:
		return fmt.Errorf("%s includes itself (through its includes)", file)
	case depth > maxIncludeDepth:
		return fmt.Errorf("%s: includes nest deeper than %d", file, maxIncludeDepth)
	case c.count >= maxIncludes:
		return fmt.Errorf("%s: more than %d included files", file, maxIncludes)
	}
	c.seen[abs] = true
	defer delete(c.seen, abs) // one file may be included twice, side by side
	c.count++
	data, err := regularfile.Read(file, maxConfigFile)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	text := uncommented(string(data))
	if line := tooDeep(text); line > 0 {
		return fmt.Errorf("%s:%d: nested deeper than %d levels of { and [: write the configuration flatter", file, line, maxNesting)
	}
	for _, m := range fileKeyRE.FindAllStringSubmatch(text, -1) {
		name := m[2] + m[3] + m[4]
		if strings.EqualFold(m[1], "operator") && !exists(name) {
			continue // a JWT itself, or a file nats-server will not find
		}
		if err := referenced(name); err != nil {
			return fmt.Errorf("%s: %s %s: %w", file, strings.ToLower(m[1]), name, err)
		}
	}
	for _, m := range includeRE.FindAllStringSubmatch(text, -1) {
		name := m[1] + m[2] + m[3]
		path := filepath.Join(filepath.Dir(file), name) // as nats-server resolves it
		if !exists(path) {
			continue
		}
		if err := c.config(path, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// uncommented is text without its comments, as nats-server's lexer
// reads them: from a "#" or "//" outside quotes, at a line's start or
// after a space, tab or one of "{[,;" (elsewhere, as in abc#def or
// nats://host, they are part of an unquoted value), to the line's end.
// Keys written in comments name no files: the server.conf toolctl auth
// init writes names its roles' commands in its header ("operator
// toolctl ...").
func uncommented(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for line := range strings.Lines(text) {
		quote, esc := byte(0), false
		cut := len(line)
	scan:
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case quote != 0:
				switch {
				case esc:
					esc = false
				case c == '\\' && quote == '"':
					esc = true
				case c == quote:
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case (c == '#' || c == '/' && i+1 < len(line) && line[i+1] == '/') &&
				(i == 0 || strings.IndexByte(" \t{[,;", line[i-1]) >= 0):
				cut = i
				break scan
			}
		}
		b.WriteString(line[:cut])
		if cut < len(line) && strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// tooDeep is the line (from 1) of text, a configuration without its
// comments, where its { and [ outside quotes nest deeper than
// maxNesting; 0 when they do not.
func tooDeep(text string) int {
	depth, n := 0, 0
	for line := range strings.Lines(text) {
		n++
		quote, esc := byte(0), false
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case quote != 0:
				switch {
				case esc:
					esc = false
				case c == '\\' && quote == '"':
					esc = true
				case c == quote:
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '{' || c == '[':
				if depth++; depth > maxNesting {
					return n
				}
			case c == '}' || c == ']':
				depth = max(depth-1, 0)
			}
		}
	}
	return 0
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// referenced checks a file the configuration names: a regular file of at
// most maxConfigFile bytes, when it exists.
func referenced(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil // nats-server says it is missing
	case fi.IsDir():
		return fmt.Errorf("is a directory")
	case !fi.Mode().IsRegular():
		return regularfile.NotRegular(fi.Mode())
	case fi.Size() > maxConfigFile:
		return fmt.Errorf("%d bytes, over the limit of %d", fi.Size(), maxConfigFile)
	}
	return nil
}
