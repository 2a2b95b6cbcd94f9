package permission

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// dangerousFiles are files that run code or hold credentials when a shell,
// git or a package manager starts: writing them is always a safety ask.
var dangerousFiles = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zprofile", ".zshenv", ".zlogin",
	".gitconfig", ".gitmodules", ".netrc", ".npmrc", ".pypirc", ".mcp.json",
}

// dangerousDirs are directories anywhere in a path whose files run code or
// hold credentials.
var dangerousDirs = []string{".git", ".ssh", ".gnupg", ".aws", ".kube", ".docker", ".vscode", ".idea"}

// systemDirs are absolute trees no tool should write to unasked.
var systemDirs = []string{"/etc", "/usr", "/bin", "/sbin", "/boot", "/lib", "/lib32", "/lib64", "/dev", "/proc", "/sys", "/var/lib"}

// harmlessDevices may be written (redirected to) freely.
var harmlessDevices = []string{"/dev/null", "/dev/stdout", "/dev/stderr"}

// dangerousPath says why writing abs (an absolute, cleaned path) needs a
// safety confirmation, or "" when it does not.
func dangerousPath(p string) string {
	if strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//") {
		return "it is a network (UNC) path"
	}
	p = filepath.ToSlash(filepath.Clean(p))
	if slices.Contains(harmlessDevices, p) {
		return ""
	}
	base := filepath.Base(p)
	if slices.Contains(dangerousFiles, base) {
		return "'" + base + "' is a configuration file that runs code or holds credentials"
	}
	for _, part := range strings.Split(p, "/") {
		if slices.Contains(dangerousDirs, part) {
			return "it is inside a '" + part + "' directory"
		}
	}
	if p == "/" {
		return "it is the root directory"
	}
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return "it is inside the system directory " + d
		}
	}
	return ""
}

var home = sync.OnceValue(func() string {
	h, _ := os.UserHomeDir()
	return h
})

// absPath expands "~" and makes p absolute against the first working
// directory (a relative path with no working directory stays relative).
// A ".." is taken as the kernel takes it: after a symbolic link it leads
// to the parent of the link's target, not back to the link's directory.
func absPath(p string, workingDirs []string) string {
	p = expandHome(p)
	if !filepath.IsAbs(p) && len(workingDirs) > 0 {
		p = workingDirs[0] + "/" + p
	}
	if filepath.IsAbs(p) && len(p) <= maxPath && slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return physicalDotDot(p)
	}
	return filepath.Clean(p)
}

// expandHome expands a leading "~" or "$HOME" to the home directory.
func expandHome(p string) string {
	h := home()
	switch {
	case h == "":
	case p == "~" || strings.HasPrefix(p, "~/"):
		return h + "/" + p[1:]
	case strings.HasPrefix(p, "$HOME/") || p == "$HOME":
		return h + "/" + strings.TrimPrefix(p, "$HOME")
	}
	return p
}

// physicalDotDot cleans an absolute path, resolving the symbolic links
// before each "..". It walks the path once, keeping the resolved path
// beside the written one and looking at each component once: resolving
// the whole path before each ".." (walked back component by component
// where it does not exist) made a 4 KB path of "x/" and "../" cost
// seconds, for each such argument of a shell command.
func physicalDotDot(p string) string {
	cur := string(filepath.Separator)
	real, exists := cur, true // cur resolved; whether it exists (may hold links)
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		switch part {
		case "", ".":
		case "..":
			real = filepath.Dir(real)
			cur = real
			_, err := os.Lstat(real)
			exists = err == nil
		default:
			cur = filepath.Join(cur, part)
			next := filepath.Join(real, part)
			if exists {
				fi, err := os.Lstat(next)
				switch {
				case err != nil:
					exists = false
				case fi.Mode()&os.ModeSymlink != 0:
					next = realPath(next) // a dangling one too
					_, err := os.Lstat(next)
					exists = err == nil
				}
			}
			real = next
		}
	}
	return cur
}

// realPath resolves symbolic links in the longest existing prefix of p,
// so a path reached through a link compares equal to its target. A
// dangling link is followed too: writing through it creates its target.
func realPath(p string) string { return realPathHops(p, 0) }

// maxLinkHops bounds the dangling links followed, as the kernel's 40.
const maxLinkHops = 40

// maxPath is PATH_MAX: the kernel opens no longer path (ENAMETOOLONG).
const maxPath = 4096

func realPathHops(p string, hops int) string {
	if len(p) > maxPath {
		return p // nothing to resolve; walking it back is quadratic
	}
	rest := ""
	for q := p; ; {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(r, rest)
		}
		if fi, err := os.Lstat(q); err == nil && fi.Mode()&os.ModeSymlink != 0 && hops < maxLinkHops {
			if t, err := os.Readlink(q); err == nil {
				if !filepath.IsAbs(t) {
					t = filepath.Join(realPathHops(filepath.Dir(q), hops+1), t)
				}
				return realPathHops(filepath.Join(t, rest), hops+1)
			}
		}
		parent := filepath.Dir(q)
		if parent == q {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
		q = parent
	}
}

// inWorkingDirs reports whether p is one of the working directories or
// inside one, after resolving symbolic links on both sides.
func inWorkingDirs(p string, workingDirs []string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	rp := realPath(p)
	for _, wd := range workingDirs {
		if wd == "" {
			continue
		}
		w := realPath(filepath.Clean(wd))
		if rp == w || strings.HasPrefix(rp, strings.TrimSuffix(w, "/")+"/") {
			return true
		}
	}
	return false
}

// absPattern is a path rule's pattern as the path it names: "~" and
// "$HOME" expanded, a relative one ("secrets/**", "./secrets/**") under
// the first working directory. A pattern without "/" (a base name,
// "*.env") or starting with "*" stays as it is. The home and working
// directories are escaped (escapeGlob): their names' "*", "?" and "["
// are themselves, not the pattern's.
func absPattern(pattern string, workingDirs []string) string {
	if !strings.Contains(pattern, "/") || strings.HasPrefix(pattern, "*") {
		return pattern // "**/x/**" is anywhere already
	}
	dir := strings.HasSuffix(pattern, "/")
	if h := home(); h != "" {
		switch {
		case pattern == "~" || strings.HasPrefix(pattern, "~/"):
			pattern = escapeGlob(h) + "/" + pattern[1:]
		case pattern == "$HOME" || strings.HasPrefix(pattern, "$HOME/"):
			pattern = escapeGlob(h) + "/" + strings.TrimPrefix(pattern, "$HOME")
		}
	}
	if !filepath.IsAbs(pattern) && len(workingDirs) > 0 {
		pattern = escapeGlob(workingDirs[0]) + "/" + pattern
	}
	p := filepath.ToSlash(absPath(pattern, workingDirs))
	if dir && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// globCache holds the compiled path patterns; emptied when it reaches
// maxCachedGlobs, as sessions' rules come and go (each approval's may be
// new) and a worker runs for months.
var (
	globCache  sync.Map // pattern → *regexp.Regexp
	globCached atomic.Int64
)

const maxCachedGlobs = 4096

// matchGlob matches a path pattern: "*" within one path segment, "**"
// across segments, "?" one character, [seq] and [!seq] one of seq or
// not (globClass); a pattern without "/" matches the
// base name ("*.env"); a pattern ending in "/" matches everything under
// that directory.
func matchGlob(pattern, p string) bool {
	p = filepath.ToSlash(p)
	if strings.HasSuffix(pattern, "/") {
		pattern += "**"
	}
	if !strings.Contains(pattern, "/") {
		p = filepath.Base(p)
	}
	re, ok := globCache.Load(pattern)
	if !ok {
		if globCached.Add(1) > maxCachedGlobs {
			globCache.Clear()
			globCached.Store(1)
		}
		re, _ = globCache.LoadOrStore(pattern, globRegexp(pattern))
	}
	return re.(*regexp.Regexp).MatchString(p)
}

// globClass is the regular expression of the bracket set p starts with,
// as fnmatch reads one: [seq] any of seq, [!seq] any but seq (nor "/"),
// a-z a range (an empty one, z-a, nothing), "]" first itself; and how
// many runes of p it took, 0 when it is not closed.
func globClass(p []rune) (string, int) {
	j := 1
	neg := j < len(p) && p[j] == '!'
	if neg {
		j++
	}
	start := j
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != ']' {
		j++
	}
	if j >= len(p) {
		return "", 0
	}
	set := p[start:j]
	quote := func(c rune) string {
		if c == '-' {
			return `\-`
		}
		return regexp.QuoteMeta(string(c))
	}
	var b strings.Builder
	for k := 0; k < len(set); k++ {
		switch {
		case k+2 < len(set) && set[k+1] == '-' && set[k] <= set[k+2]:
			b.WriteString(quote(set[k]) + "-" + quote(set[k+2]))
			k += 2
		case k+2 < len(set) && set[k+1] == '-':
			k += 2 // an empty range
		default:
			b.WriteString(quote(set[k]))
		}
	}
	switch {
	case neg:
		return "[^/" + b.String() + "]", j + 1
	case b.Len() == 0:
		return `[^\x00-\x{10FFFF}]`, j + 1 // only empty ranges: nothing
	}
	return "[" + b.String() + "]", j + 1
}

func globRegexp(glob string) *regexp.Regexp {
	pattern := []rune(glob)
	var b strings.Builder
	b.WriteString("(?s)^") // "**" crosses a newline in a name as any character
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				i++
				if i+1 < len(pattern) && pattern[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?") // "**/" also matches no directory
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			if class, n := globClass(pattern[i:]); n > 0 {
				b.WriteString(class)
				i += n - 1
			} else {
				b.WriteString(`\[`) // unclosed: itself
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
