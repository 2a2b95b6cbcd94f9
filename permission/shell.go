package permission

import (
	"cmp"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// simpleCmd is one command of a shell line: its leading VAR=value
// assignments, its words (quotes removed) and the files it redirects
// output to.
type simpleCmd struct {
	assigns []string
	// exported are the NAME=VALUE variables the commands before it on
	// its line export (exportsAfter), or those of the command that runs
	// it (env X=1 cmd, X=1 sh -c cmd): they are in its environment as
	// its assigns are, but no rule names them.
	exported []string
	args     []string
	outputs  []string
	// expands: an argument has a $-expansion ($VAR, ${VAR:-x}, and a
	// command substitution, whose output the word holds), a brace
	// expansion or a pattern (*, ?, […]) the shell replaces with the
	// names of files, which may be any number and read as flags, so its
	// words are not known here; dollar: a
	// $-expansion; nameDollar: in the command's name, which may then be
	// any command.
	expands, dollar, nameDollar bool
	// nameGlob: the command's name has a pattern (/bin/r[m], r?), which
	// the shell replaces with a file's name: it may be any command too.
	nameGlob bool
	// braced are the arguments with a brace expansion ({a,b}, {1..3}).
	braced []string
	// reading: a command wrapped found as another reading of the command
	// it came from (its path's base name, git's subcommand without git's
	// options, the command after a keyword), which runs nothing more: an
	// allow rule that covers that one covers it.
	reading bool
	// bg: the command ends a list the shell runs in the background
	// (&), in a subshell of its own.
	bg bool
	// braces: how many of its first words are a brace the shell reads as
	// a reserved word, opening or closing a group: unquoted, with no
	// assignment or redirection before it ('}', \}, >&2 } and X= } are
	// commands of that name).
	braces int
	// redirected: the command has a redirection, which may fail and
	// keep it from running: one that outputs and inputs list, a
	// here-document, or one that duplicates a descriptor (>&5 fails
	// where 5 is not open).
	redirected bool
	// ampOut: as dash reads "&>", the redirection after its "&", which
	// begins a command of its own (`make &> log` is `make &` and
	// `> log`).
	ampOut bool
	// subst: a command of a script (sh -c, eval) whose line uses
	// substitution (shellLine.subst), which can run anything: it is not
	// read-only.
	subst bool
	// dirs are the directories a cd or pushd before the command may
	// have led to, "" standing for the shell's own; none: the shell's
	// own only (followDirs).
	dirs []string
	// links are the symbolic links commands before it on its line
	// make, through which a path it writes may lead elsewhere
	// (followLinks).
	links []symlink
	// link is the operator joining the command to the one before it on
	// its line: "&&", "||" or "|", a newline after one included; "" for
	// the first of a list (after ";", "&" or a newline, or two operators
	// in a row).
	link string
	// What the command reads as its standard input, where the line says
	// (stdin.go): from, the command before it in a pipeline; inputs, the
	// files redirected to it (<); here, its here-documents' bodies and
	// here-strings.
	from   *simpleCmd
	inputs []string
	here   []string
}

// text is the command as deny and ask rules see it: its words (without
// the assignments) joined by one space.
func (c simpleCmd) text() string { return strings.Join(c.args, " ") }

// fullText is the command as allow rules see it: the assignments too,
// which change what runs (PATH, LD_PRELOAD, NODE_OPTIONS, …).
func (c simpleCmd) fullText() string {
	return strings.Join(append(slices.Clone(c.assigns), c.args...), " ")
}

// environ are the NAME=VALUE variables c's environment has from its
// line: those exported before it, then its assigns.
func (c simpleCmd) environ() []string {
	if len(c.assigns) == 0 {
		return c.exported // shared: its capacity ends at its length
	}
	return slices.Concat(c.exported, c.assigns)
}

// shellLine is a parsed command line.
type shellLine struct {
	cmds []simpleCmd
	// subst: the line uses command or process substitution ($(…), `…`,
	// <(…), >(…)), which can run anything.
	subst bool
	// inner are the substitutions' command lines.
	inner []string
	// bodies are the here-documents' bodies and the here-strings; data
	// are the commands they hold when read as scripts (bash <<EOF, bash
	// <<< 'rm x'), for deny and ask rules and the removal check only: a
	// body is as often prose.
	bodies []string
	data   []simpleCmd
	// grouped: the line has what reading it as commands joined by
	// operators does not follow: a parenthesis outside a substitution
	// (a subshell, arithmetic, a function's definition, a case pattern),
	// [[ … ]], whose && and || are its own, or an operator inside ${…},
	// which is the word's. Its links are not taken for the shell's
	// (cdsHold).
	grouped bool
}

var errUnterminated = errors.New("unterminated quote")

// parseShell splits a command line into simple commands at ;, &, &&, ||,
// | and newlines, removing quotes. It is deliberately small: anything it
// cannot classify is treated as not read-only by its callers.
//
// A line with $'…' or "&>" is read twice: as bash reads it (ANSI-C
// quoting, where \' is a quote inside the string; "&>" redirecting both
// outputs) and as sh (dash) does ("$" and a plain single-quoted string;
// "&" ending a command run in the background, and ">" starting the next:
// `ls &>/dev/null touch x` runs touch). The two may split the line into
// different commands, so the result has both readings' commands, the
// substitution either has, and the error either has (with the commands
// read before it).
//
// The command lines of substitutions are read too (nested ones up to
// maxNesting deep), and their commands added to the line's.
//
// Each command's dirs are those the cd and pushd commands before it may
// lead to (followDirs).
func parseShell(line string) (shellLine, error) {
	l, err := parseNested(line, 0)
	dirs := lineDirs(l, line, err)
	if in, il, ok := wholeSubshell(line, l, err); ok {
		dirs = lineDirs(il, in, nil)
		for i := range l.cmds {
			l.cmds[i].dirs = il.cmds[i].dirs
		}
	}
	followDirs(l.data, dirs, true, false, false)
	followLinks(l.cmds, nil, true, repeats(l.cmds))
	return l, err
}

// lineDirs sets the dirs of the commands of l, line parsed (with err),
// and returns the dirs after them all (followDirs).
func lineDirs(l shellLine, line string, err error) []string {
	hold := err == nil && cdsHold(l)
	exits := hold && exitsHold(l, line)
	dirs := followDirs(l.cmds, nil, true, hold, exits)
	if repeats(l.cmds) {
		dirs = followDirs(l.cmds, dirs, true, hold, exits)
	}
	return dirs
}

// wholeSubshell reads a line that is one subshell and nothing else,
// "(cd sub && make > ../log)": in is the command list inside, il its
// parse, whose commands are l's (the parentheses aside), in order. Its
// cds are the subshell's own and nothing runs after them, so where its
// commands run is where they would as a line of their own. ok is false
// for any other line, and for one whose list has parentheses itself
// ("(cd a) && (ls > f)", whose first "(" is closed before the end).
func wholeSubshell(line string, l shellLine, err error) (in string, il shellLine, ok bool) {
	t := strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(t, "(") || strings.HasPrefix(t, "((") || !strings.HasSuffix(t, ")") || len(t) < 2 {
		return "", il, false
	}
	in = t[1 : len(t)-1]
	il, err = parseNested(in, 0)
	if err != nil || il.grouped || len(il.cmds) != len(l.cmds) {
		return "", il, false
	}
	return in, il, true
}

// repeats reports commands of which some may run again after the cds
// below them (a loop's body, a function's), so that each may run where
// any cd of them led, as a second pass of followDirs from there finds:
// a loop (for, while, until, select), a function's definition
// (function f, f()).
func repeats(cmds []simpleCmd) bool {
	return slices.ContainsFunc(cmds, func(c simpleCmd) bool {
		for _, a := range c.args {
			switch {
			case slices.Contains([]string{"for", "while", "until", "select", "function"}, a),
				strings.HasSuffix(a, "()"):
				return true
			case !slices.Contains(keywords, a):
				return false
			}
		}
		return false
	})
}

// maxNesting bounds the substitutions (and sh -c scripts) read inside
// each other; deeper ones are a safety ask (unparsable).
const maxNesting = 8

var errTooDeep = errors.New("substitutions nested too deep")

func parseNested(line string, depth int) (shellLine, error) {
	if depth > maxNesting {
		return shellLine{subst: true}, errTooDeep
	}
	bash, err := parseShellAs(line, true)
	if strings.Contains(line, "$'") || strings.Contains(line, "&>") {
		sh, shErr := parseShellAs(line, false)
		bash.cmds = append(bash.cmds, sh.cmds...)
		bash.subst = bash.subst || sh.subst
		bash.grouped = bash.grouped || sh.grouped
		bash.inner = append(bash.inner, sh.inner...)
		bash.bodies = append(bash.bodies, sh.bodies...)
		err = cmp.Or(err, shErr)
	}
	for _, in := range slices.Compact(slices.Sorted(slices.Values(bash.inner))) {
		l, e := parseNested(in, depth+1)
		bash.cmds = append(bash.cmds, l.cmds...)
		bash.data = append(bash.data, l.data...)
		bash.grouped = bash.grouped || l.grouped
		err = cmp.Or(err, e)
	}
	for _, b := range slices.Compact(slices.Sorted(slices.Values(bash.bodies))) {
		l, e := parseNested(b, depth+1)
		bash.data = append(append(bash.data, l.cmds...), l.data...)
		if errors.Is(e, errTooDeep) { // a prose body's errors are no error
			err = cmp.Or(err, e)
		}
	}
	bash.inner, bash.bodies = nil, nil
	return bash, err
}

// parseShellAs is parseShell with one reading of $'…' and "&>": bash's
// (ANSI-C quoting, a redirection) or sh's (a "$" and a quoted string, "&"
// and ">").
func parseShellAs(line string, bash bool) (shellLine, error) {
	var out shellLine
	var cur simpleCmd
	var word strings.Builder
	inWord := false
	redirect := false // the next word is a redirection target
	input := false    // the next word is a file read (<, <<<): no argument
	// The next word is a here-document's delimiter (<<, <<- strips tabs);
	// the bodies of those given on a line follow its newline.
	delimNext, stripNext := false, false
	var docs []hereDoc
	hereString := false // the next word is a here-string (<<<), a body
	quoted := false     // the current word has quotes or escapes
	// Unquoted parentheses open (subshells, (( … ))): a "<<" inside may
	// be a shift, so a line with one cannot be read (unsure). paren: the
	// last character was one, after which a "#" begins a comment.
	parens, paren, unsure := 0, false, false
	// params counts the parameter expansions ("${") open: inside one "#"
	// and "<<" are characters of the word, not a comment or a
	// here-document. The shell ends one at its first unquoted "}" (a
	// plain "{" inside opens nothing), and "$${" is "$$" and a "{".
	params := 0
	// paramChecked: the index of the "}" of the last ${…} inside double
	// quotes checked by quoteInParam.
	paramChecked := -1
	// What the shell does to the current word: a $-expansion; a brace
	// expansion, an unquoted "}" closing a "{" with a "," or ".." at its
	// own level. open holds, for each "{" not closed yet, whether one was
	// seen.
	// glob: an unquoted "*" or "?", or "]" after an unquoted "[" (bracket).
	var dollar, brace, glob, bracket bool
	var open []bool
	resetWord := func() {
		word.Reset()
		inWord, dollar, brace, glob, bracket, open, quoted = false, false, false, false, false, open[:0], false
	}
	flushWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		expands, braced, dollarWord, quotedWord, globWord := dollar || brace || glob, brace, dollar, quoted, glob
		resetWord()
		if input {
			switch {
			case delimNext:
				docs = append(docs, hereDoc{delim: w, literal: quotedWord, strip: stripNext, cmd: len(out.cmds)})
			case hereString:
				out.bodies = append(out.bodies, w) // bash <<< 'rm x' runs it
				cur.here = append(cur.here, w)
			default:
				cur.inputs = append(cur.inputs, w)
			}
			input, delimNext, hereString = false, false, false
			return
		}
		if redirect {
			redirect = false
			// The shell brace-expands the target, and writes to it when
			// that makes one word (> {/srv/x,} writes /srv/x): checks
			// see the words it makes.
			if braced {
				work := maxBraceWork
				if ws, ok := expandBraces(w, maxBraceWords, &work); ok {
					cur.outputs = append(cur.outputs, ws...)
					return
				}
			}
			cur.outputs = append(cur.outputs, w)
			return
		}
		if len(cur.args) == 0 && isAssignment(w) {
			cur.assigns = append(cur.assigns, w)
			return
		}
		if len(cur.args) == 0 && dollarWord {
			cur.nameDollar = true
		}
		// A case clause's pattern ("*)", "* )", with an unquoted ")")
		// is no command's name.
		if len(cur.args) == 0 && globWord && !strings.HasSuffix(w, ")") {
			cur.nameGlob = true
		}
		if len(cur.args) == 1 && w == ")" && !quotedWord {
			cur.nameGlob = false
		}
		if w == "[[" && !quotedWord {
			out.grouped = true
		}
		if (w == "{" || w == "}") && !quotedWord && cur.braces == len(cur.args) && len(cur.assigns) == 0 && !cur.redirected {
			cur.braces++
		}
		cur.args = append(cur.args, w)
		cur.expands = cur.expands || expands
		cur.dollar = cur.dollar || dollarWord
		if braced {
			cur.braced = append(cur.braced, w)
		}
	}
	// pipes: the index of the command piped into each command of the
	// line (-1: none); piped, of the command before the "|" read last.
	var pipes []int
	piped := -1
	link := "" // the next command's
	flushCmd := func() {
		flushWord()
		if len(cur.args) > 0 || len(cur.outputs) > 0 || len(cur.assigns) > 0 {
			cur.link = link
			out.cmds = append(out.cmds, cur)
			pipes = append(pipes, piped)
			piped = -1
		}
		cur = simpleCmd{}
		redirect, input, delimNext, hereString = false, false, false, false
	}
	rs := []rune(line)
	pr := newPrompts(rs)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		afterParen := paren
		paren = false
		switch {
		case c == '#' && (!inWord || afterParen) && params == 0:
			// A comment, to the end of the line (quotes in it included).
			for i+1 < len(rs) && rs[i+1] != '\n' {
				i++
			}
		case bash && c == '$' && next == '\'':
			inWord, quoted = true, true
			j, ok := ansiCString(rs, i+2, &word)
			if !ok {
				return out, errUnterminated
			}
			i = j
		case c == '\'':
			inWord, quoted = true, true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j >= len(rs) {
				return out, errUnterminated
			}
			word.WriteString(string(rs[i+1 : j]))
			i = j
		case c == '"':
			inWord, quoted = true, true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '{' && j > paramChecked {
					// (Once for an outermost ${…}: it checks those inside.)
					var quote bool
					if paramChecked, quote = quoteInParam(rs, j+2); quote {
						return out, errQuoteInParam
					}
				}
				switch {
				case rs[j] == '\\' && j+1 < len(rs):
					if rs[j+1] == '\n' && joinsToken(rs, j) {
						return out, errSplitToken
					}
					if j++; !strings.ContainsRune("$`\"\\\n", rs[j]) {
						word.WriteRune('\\') // "a\b" is a\b
					}
					word.WriteRune(rs[j])
					continue
				case rs[j] == '`', rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '(':
					end, err := substitution(rs, j, &out, 0)
					if err != nil {
						return out, err
					}
					word.WriteString(string(rs[j : end+1]))
					j, dollar = end, true // its output is the word's: as a $VAR
					continue
				case pr.at(rs, j) || evaluatesValue(rs, j):
					out.subst = true
				case rs[j] == '$' && j+1 < len(rs) && rs[j+1] != '"':
					dollar = true
				}
				word.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return out, errUnterminated
			}
			i = j
		case c == '\\':
			if next == '\n' {
				if joinsToken(rs, i) {
					return out, errSplitToken
				}
				i++
				continue
			}
			inWord, quoted = true, true
			if next == 0 { // escaping nothing: the shell keeps it
				word.WriteRune(c)
				continue
			}
			word.WriteRune(next)
			i++
		case c == '`', c == '$' && next == '(', (c == '<' || c == '>') && next == '(':
			end, err := substitution(rs, i, &out, 0)
			if err != nil {
				return out, err
			}
			inWord, dollar = true, true // its output is the word's: as a $VAR
			word.WriteString(string(rs[i : end+1]))
			i = end
		case pr.at(rs, i) || evaluatesValue(rs, i):
			out.subst = true
			inWord = true
			word.WriteRune(c)
		case c == ';' || c == '\n' || c == '|' || c == '&' && (next != '>' || !bash):
			pipe := c == '|' && next != '|'
			if c == '|' && next == '&' { // |& pipes stderr too
				i++
			}
			op := "" // the operator, as a link: ";", "&" and newlines end a list
			switch {
			case pipe:
				op = "|"
			case (c == '&' || c == '|') && next == c:
				op = string([]rune{c, c})
				i++
			}
			n := len(out.cmds)
			flushCmd()
			cur.ampOut = c == '&' && next == '>' // dash's reading of "&>"
			if pipe && len(out.cmds) > n {
				piped = n
			}
			if c == '&' && op == "" && len(out.cmds) > n {
				out.cmds[n].bg = true
			}
			if params > 0 {
				out.grouped = true // ${x:-a; b}: one word
			}
			// A newline right after &&, || or | (or blank and comment
			// lines after one) does not end the list: the command after
			// it is joined by that operator.
			switch {
			case len(out.cmds) > n:
				link = op
			case c != '\n':
				link = ""
			}
			if c == '\n' && unsure {
				return out, errHereDocInParens
			}
			if c == '\n' && len(docs) > 0 {
				end, err := hereDocBodies(rs, i, docs, &out)
				if err != nil {
					return out, err
				}
				i, docs = end, nil
			}
		case c == '>' || c == '<' || bash && c == '&' && next == '>':
			cur.redirected = true
			// A file-descriptor number right before the operator (2>)
			// is not a word; quoted digits ('2'>, \2>) are one, and so
			// are digits a redirection before names (dash: <>21>&2), and
			// more than one digit (dash takes one; bash's 10> read as a
			// word only adds an argument).
			if w := word.String(); inWord && !quoted && !redirect && !input && len(w) == 1 && isDigits(w) {
				resetWord()
			} else {
				flushWord()
			}
			if c == '&' {
				i++
			}
			isOut := rs[i] == '>' || i+1 < len(rs) && rs[i+1] == '>' // <> opens for writing too
			for i+1 < len(rs) && (rs[i+1] == '>' || rs[i+1] == '|') {
				i++
			}
			if i+1 < len(rs) && rs[i+1] == '&' {
				j := i + 2
				for j < len(rs) && !strings.ContainsRune(" \t;&|<>\n", rs[j]) {
					j++
				}
				t := string(rs[i+2 : j])
				if isDigits(t) || t == "-" {
					i = j - 1 // >&2, 2>&1, >&-: a descriptor, not a file
					continue
				}
				if strings.HasPrefix(t, "-") {
					i += 2 // <&-rm: bash closes, and rm is the next word
					continue
				}
				i++ // >&word: bash sends both outputs to the file word
			}
			// An input redirection's target is read, not written, and
			// is no argument; it is a word as any other (quotes,
			// substitutions).
			redirect, input = isOut, !isOut
			if c == '<' && next == '<' && i+2 < len(rs) && rs[i+2] == '<' {
				// <<< is a here-string: its word, not a here-document
				// whose body would take the lines after it.
				hereString = true
				i += 2
			} else if c == '<' && next == '<' {
				i++ // << (<<< is a here-string, a word)
				unsure = unsure || parens > 0
				delimNext = parens == 0 && params == 0
				// (<<\<newline>- is <<- too.)
				stripNext = false
				if j := joinedIndex(rs, i); j < len(rs) && rs[j] == '-' {
					stripNext, i = true, j
				}
			}
		case c == ' ' || c == '\t':
			flushWord()
		default:
			inWord = true
			word.WriteRune(c)
			if c == '{' && opensParam(rs, i) {
				params++
			} else if c == '}' && params > 0 {
				params--
			}
			switch {
			case c == '$' && next != 0 && next != ' ' && next != '\t' && next != '\n' && next != '\'':
				// (In the sh reading "$'" is a "$" and a quoted string.)
				dollar = true
			case c == '{':
				open = append(open, false)
			case len(open) > 0 && (c == ',' || c == '.' && joinedNext(rs, i) == '.'):
				open[len(open)-1] = true
			case len(open) > 0 && c == '}':
				brace = brace || open[len(open)-1]
				open = open[:len(open)-1]
			case c == '*' || c == '?' || c == ']' && bracket:
				glob = true
			case c == '[':
				bracket = true
			case c == '(':
				parens, paren, out.grouped = parens+1, true, true
			case c == ')':
				parens, paren, out.grouped = max(parens-1, 0), true, true
			}
		}
	}
	flushCmd()
	linkPipes(out.cmds, pipes)
	exportsAfter(out.cmds)
	return out, nil
}

// quoteInParam reports a quote or a backquote inside the ${…} whose
// body starts at rs[from], within double quotes: the shell reads quotes
// there as quotes of their own ("${x:-"'"}" is one word, the "'" quoted),
// where this reading would end the double-quoted word at the inner one.
// Such a line cannot be read (errQuoteInParam); the first unescaped "}"
// of the same depth ends the ${…}.
// It returns the index of that "}"; one without is a quote too (the
// shell refuses it).
func quoteInParam(rs []rune, from int) (end int, quote bool) {
	depth := 1
	for j := from; j < len(rs); j++ {
		switch {
		case rs[j] == '\\':
			j++
		case strings.ContainsRune("\"'`", rs[j]):
			return j, true
		case rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '{':
			depth++
			j++
		case rs[j] == '}':
			if depth--; depth == 0 {
				return j, false
			}
		}
	}
	return len(rs), true
}

// opensParam reports whether the "{" at rs[i] opens a parameter
// expansion: it follows an odd run of "$" (the first not escaped by a
// backslash), as "$$" is a parameter of its own.
func opensParam(rs []rune, i int) bool {
	j := i
	for j > 0 && rs[j-1] == '$' {
		j--
	}
	n := i - j
	escapes := 0
	for k := j; k > 0 && rs[k-1] == '\\'; k-- {
		escapes++
	}
	if escapes%2 == 1 {
		n-- // \$ is a "$" of the word
	}
	return n%2 == 1
}

// joinsToken reports whether the backslash and newline at rs[i] (and
// any more right after) join the characters around them into one token
// of two, such as "$(" or "<<": the shell removes them before it reads
// operators and expansions, where this reading takes each character as
// it comes.
func joinsToken(rs []rune, i int) bool {
	k := i
	for k+1 < len(rs) && rs[k] == '\\' && rs[k+1] == '\n' {
		k += 2
	}
	if i == 0 || k >= len(rs) {
		return false
	}
	// After a "$", whatever follows makes an expansion with it ($$,
	// $x, ${, $().
	return rs[i-1] == '$' || slices.Contains(twoCharTokens, string([]rune{rs[i-1], rs[k]}))
}

// joinedNext is the character after rs[i] once the shell has removed
// the backslashes and newlines right after it (0 at the end):
// "{d.\<newline>.d}" is the sequence {d..d}.
func joinedNext(rs []rune, i int) rune {
	if j := joinedIndex(rs, i); j < len(rs) {
		return rs[j]
	}
	return 0
}

// joinedIndex is the index of joinedNext (len(rs) at the end).
func joinedIndex(rs []rune, i int) int {
	j := i + 1
	for j+1 < len(rs) && rs[j] == '\\' && rs[j+1] == '\n' {
		j += 2
	}
	return min(j, len(rs))
}

// twoCharTokens are the starts of the operators whose first character
// does not already decide them.
var twoCharTokens = []string{"<<", "<>", "<&", "<(", ">>", ">|", ">&", ">(", "&&", "&>", "||", "|&", ";;", ";&", "(("}

// hereDoc is a here-document whose body is still to be read: its
// delimiter (quotes removed); literal when quotes in the delimiter make
// the body plain text (otherwise its substitutions run); strip for <<-,
// which strips leading tabs.
type hereDoc struct {
	delim          string
	literal, strip bool
	cmd            int // the index of its command in the line's
}

// endsAt reports a line of d's body that is its delimiter, as bash
// (bash) or dash reads it: <<- strips the line's leading tabs first,
// where bash compares the line as it is too (<<-'<tab>EOF' ends at
// "<tab>EOF" in bash, never in dash).
func (d hereDoc) endsAt(line string, bash bool) bool {
	if bash && line == d.delim {
		return true
	}
	if d.strip {
		line = strings.TrimLeft(line, "\t")
	}
	return line == d.delim
}

// hereDocBodies skips the bodies of docs, which begin after the newline
// at rs[nl], as the shell reads them: each ends at the line that is its
// delimiter (or the end of the line). With out, it records the bodies
// and the substitutions of those that are not literal (without, only
// where they end matters: substitution). It returns the index of the last
// character of the last body's delimiter line.
func hereDocBodies(rs []rune, nl int, docs []hereDoc, out *shellLine) (int, error) {
	i := nl // the newline before the next line
	for _, d := range docs {
		if strings.Contains(d.delim, "\n") {
			// <<'E<newline>F': bash compares one line at a time and
			// never ends the body, dash ends it at the lines E and F.
			return 0, errHereDocEnds
		}
		from, to := i+1, len(rs) // the body; to: where its delimiter's line starts
		// Where the delimiter is unquoted, bash joins a line ending with
		// a backslash to the next before it compares (and strips <<-'s
		// tabs from the joined line), and dash does not. ends are where
		// the lines sh and bash read as the delimiter start, lineEnds
		// where they end. Where both end the body, after different
		// lines, the lines between are commands to one shell and the
		// body to the other, and a here-document of the other's among
		// them may hide commands it runs: the line cannot be read.
		// Where only one ends it, the other reads the rest as the body.
		ends, lineEnds := [2]int{-1, -1}, [2]int{}
		var joined strings.Builder
		lstart, joining := 0, false
		for i+1 < len(rs) && (ends[0] < 0 || ends[1] < 0) {
			start := i + 1
			i = start
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			line := string(rs[start:i])
			if ends[0] < 0 && d.endsAt(line, false) {
				ends[0], lineEnds[0] = start, i
			}
			if ends[1] >= 0 {
				continue
			}
			if d.literal {
				if d.endsAt(line, true) {
					ends[1], lineEnds[1] = start, i
				}
				continue
			}
			if !joining {
				joined.Reset()
				lstart = start
			}
			backslashes := len(line) - len(strings.TrimRight(line, "\\"))
			if joining = backslashes%2 == 1; joining {
				joined.WriteString(line[:len(line)-1])
				continue
			}
			if joined.WriteString(line); d.endsAt(joined.String(), true) {
				ends[1], lineEnds[1] = lstart, i
			}
		}
		switch {
		case ends[0] >= 0 && ends[1] >= 0 && lineEnds[0] != lineEnds[1]:
			return 0, errHereDocEnds
		case ends[1] >= 0:
			to, i = ends[1], lineEnds[1]
			if ends[0] >= 0 {
				to = min(to, ends[0]) // <tab>\ and <tab>EOF under <<-
			}
		case ends[0] >= 0:
			to, i = ends[0], lineEnds[0]
		}
		body := rs[min(from, to):to]
		if out != nil {
			out.bodies = append(out.bodies, string(body))
			if d.cmd < len(out.cmds) {
				out.cmds[d.cmd].here = append(out.cmds[d.cmd].here, string(body))
			}
		}
		if d.literal || out == nil {
			continue // no substitutions, or none to record
		}
		pr := newPrompts(body)
		for k := 0; k < len(body); k++ {
			switch {
			case body[k] == '\\':
				if k+1 < len(body) && body[k+1] == '\n' && joinsToken(body, k) {
					return 0, errSplitToken
				}
				k++
			case body[k] == '`', body[k] == '$' && k+1 < len(body) && body[k+1] == '(':
				end, err := substitution(body, k, out, 0)
				if err != nil {
					return 0, err
				}
				k = end
			case pr.at(body, k) || evaluatesValue(body, k):
				out.subst = true
			}
		}
	}
	return min(i, len(rs)), nil
}

// substitution reads the command or process substitution at rs[i] ($(…),
// `…`, <(…), >(…)) as the shell does, quotes and nested substitutions
// included (at most maxNesting deep); it records its command line in
// out.inner (nil for a nested one: reading that line finds it) and
// returns the index of its last character.
func substitution(rs []rune, i int, out *shellLine, depth int) (end int, err error) {
	if depth > maxNesting {
		return 0, errTooDeep
	}
	record := func(body []rune) {
		if out != nil {
			out.subst = true
			out.inner = append(out.inner, string(body))
		}
	}
	if rs[i] == '`' {
		for j := i + 1; j < len(rs); j++ {
			switch rs[j] {
			case '\\':
				j++
			case '`':
				record(rs[i+1 : j])
				return j, nil
			}
		}
		return 0, errUnterminated
	}
	start := i + 2 // after "$(", "<(" or ">("
	// The parentheses open inside, each true when it opens a substitution
	// ($(, <(, >(), whose ")" ends no word.
	var open []bool
	// A "#" at the start of a word begins a comment, and the bodies of the
	// here-documents of a line follow its newline: a ")" in either does
	// not end the substitution. A "<<" inside parentheses may be a shift
	// ((( x << 2 ))) or a here-document (a subshell's): a line with one
	// cannot be read. So cannot a case, whose patterns end with ")".
	wordStart, unsure := true, false
	var docs []hereDoc
	for j := start; j < len(rs); j++ {
		c, atStart := rs[j], wordStart
		wordStart = strings.ContainsRune(" \t\n;&|(<>", c)
		switch c {
		case '#':
			if atStart {
				for j+1 < len(rs) && rs[j+1] != '\n' {
					j++
				}
			}
		case 'c':
			if atStart && caseAt(rs, j) {
				return 0, errCaseInSubstitution
			}
		case '\n':
			if unsure {
				return 0, errHereDocInParens
			}
			if len(docs) > 0 {
				if j, err = hereDocBodies(rs, j, docs, nil); err != nil {
					return 0, err
				}
				docs = nil
			}
		case '<':
			if j+2 < len(rs) && rs[j+1] == '<' && rs[j+2] == '<' {
				j += 2 // a here-string (<<<): a word, no here-document
				continue
			}
			if j+2 < len(rs) && rs[j+1] == '<' {
				if len(open) > 0 {
					unsure = true
					continue
				}
				var d hereDoc
				if d, j, err = hereDocDelim(rs, j+2); err != nil {
					return 0, err
				}
				docs = append(docs, d)
			}
		case '\\':
			j++
		case '\'':
			k := slices.Index(rs[j+1:], '\'')
			if k < 0 {
				return 0, errUnterminated
			}
			j += k + 1
		case '"':
			for j++; j < len(rs) && rs[j] != '"'; j++ {
				switch {
				case rs[j] == '\\':
					j++
				case rs[j] == '`' || rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '(':
					if j, err = substitution(rs, j, nil, depth+1); err != nil {
						return 0, err
					}
				}
			}
			if j >= len(rs) {
				return 0, errUnterminated
			}
		case '`':
			if j, err = substitution(rs, j, nil, depth+1); err != nil {
				return 0, err
			}
		case '(':
			open = append(open, j > 0 && strings.ContainsRune("$<>", rs[j-1]))
		case ')':
			if len(open) == 0 {
				record(rs[start:j])
				return j, nil
			}
			wordStart = !open[len(open)-1]
			open = open[:len(open)-1]
		}
	}
	return 0, errUnterminated
}

// caseAt reports "case WORD in" at rs[i], and what may be one: the end
// of the line after "case", a WORD with quotes or expansions.
func caseAt(rs []rune, i int) bool {
	blank := func(j int) bool { return j < len(rs) && strings.ContainsRune(" \t\n", rs[j]) }
	if string(rs[i:min(i+4, len(rs))]) != "case" {
		return false
	}
	j := i + 4
	if j == len(rs) {
		return true
	}
	if !blank(j) {
		return false
	}
	for ; blank(j); j++ {
	}
	for ; j < len(rs) && !blank(j); j++ {
		if strings.ContainsRune("'\"\\$`", rs[j]) {
			return true // a word with quotes or expansions: may hold blanks
		}
	}
	for ; blank(j); j++ {
	}
	return j >= len(rs) || string(rs[j:min(j+2, len(rs))]) == "in" && (j+2 == len(rs) || blank(j+2))
}

var (
	errCaseInSubstitution = errors.New("a case inside a substitution")
	errHereDocInParens    = errors.New("a here-document or shift inside parentheses")
	errSplitToken         = errors.New("a backslash and a newline inside an operator or expansion")
	errHereDocEnds        = errors.New("a here-document whose body bash and sh end at different lines")
	errQuoteInParam       = errors.New("a quote inside ${…} inside double quotes")
)

// hereDocDelim reads the delimiter word of a here-document after "<<" at
// rs[i] ("-" first for <<-); it returns the index of the word's last
// character.
func hereDocDelim(rs []rune, i int) (d hereDoc, end int, err error) {
	if i < len(rs) && rs[i] == '-' {
		d.strip = true
		i++
	}
	for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t') {
		i++
	}
	var w strings.Builder
	for ; i < len(rs) && !strings.ContainsRune(" \t\n;&|()<>", rs[i]); i++ {
		switch rs[i] {
		case '\\':
			d.literal = true
			if i++; i < len(rs) {
				w.WriteRune(rs[i])
			}
		case '\'', '"':
			d.literal = true
			k := slices.Index(rs[i+1:], rs[i])
			if k < 0 {
				return d, 0, errUnterminated
			}
			w.WriteString(string(rs[i+1 : i+1+k]))
			i += k + 1
		default:
			w.WriteRune(rs[i])
		}
	}
	d.delim = w.String()
	return d, i - 1, nil
}

// prompts tells the "${" of a line that may be a prompt expansion
// (${NAME@P}, whose value's substitutions run): every one when the line
// has "@P}" anywhere (the "}" of a nested ${…}, as in ${_[${#i}]@P},
// comes first), and one with no "}" after it (unterminated: bash refuses
// it, nothing to allow). Made in one pass, it answers each "${" at once.
type prompts struct {
	any       bool
	lastClose int
}

func newPrompts(rs []rune) prompts {
	p := prompts{any: strings.Contains(strings.ReplaceAll(string(rs), "\\\n", ""), "@P}"), lastClose: -1} // continued lines joined, as the shell does
	for i := len(rs) - 1; i >= 0 && p.lastClose < 0; i-- {
		if rs[i] == '}' {
			p.lastClose = i
		}
	}
	return p
}

// at reports a prompt expansion at rs[i].
func (p prompts) at(rs []rune, i int) bool {
	return rs[i] == '$' && i+1 < len(rs) && rs[i+1] == '{' && (p.any || p.lastClose < i)
}

// evaluatesValue reports an expansion at rs[i] in which bash reads a
// variable's value as an arithmetic expression or a name, where an array
// subscript in it runs its command substitutions: $[…], ${!NAME}
// (indirection), ${NAME[…]} and ${NAME:OFFSET} (an offset, not :-, :=, :?
// or :+). The value need not be on the line: `echo 'a[$(rm x)]'; echo
// ${!_}` runs rm, as "_" holds the last argument of the command before.
func evaluatesValue(rs []rune, i int) bool {
	// The shell removes a backslash and a newline before it reads the
	// expansion (${PWD\<newline>:_} is ${PWD:_}): skip returns the index
	// of the first character at or after j that is not one.
	skip := func(j int) int {
		for j+1 < len(rs) && rs[j] == '\\' && rs[j+1] == '\n' {
			j += 2
		}
		return j
	}
	if rs[i] != '$' {
		return false
	}
	j := skip(i + 1)
	if j == len(rs) {
		return false
	}
	if rs[j] == '[' {
		return true
	}
	if rs[j] != '{' {
		return false
	}
	j = skip(j + 1)
	if j < len(rs) && rs[j] == '!' {
		return true
	}
	if j < len(rs) && rs[j] == '#' {
		j = skip(j + 1)
	}
	if j < len(rs) && strings.ContainsRune("@*#?$!-", rs[j]) {
		j = skip(j + 1)
	} else {
		for j < len(rs) && (rs[j] == '_' || rs[j] >= 'a' && rs[j] <= 'z' || rs[j] >= 'A' && rs[j] <= 'Z' || rs[j] >= '0' && rs[j] <= '9') {
			j = skip(j + 1)
		}
	}
	switch {
	case j < len(rs) && rs[j] == '[':
		return true
	case j < len(rs) && rs[j] == ':':
		k := skip(j + 1)
		return k < len(rs) && !strings.ContainsRune("-=?+", rs[k])
	}
	return false
}

// ansiCString reads a $'…' string from rs[from] (after the opening
// quote) into word, decoding bash's escapes; it returns the index of the
// closing quote, ok false when there is none. Where the string ends is
// bash's reading of the line: a backslash takes the one character after
// it, whatever the escape, and the first quote not so taken ends it; the
// escapes are decoded in the string alone after that ("\c" at its end
// takes no quote: $'\c' is a backslash and a c), up to one that makes a
// NUL, where bash's string ends.
func ansiCString(rs []rune, from int, word *strings.Builder) (int, bool) {
	end := -1
	for j := from; j < len(rs) && end < 0; j++ {
		switch rs[j] {
		case '\\':
			j++
		case '\'':
			end = j
		}
	}
	if end < 0 {
		return len(rs), false
	}
	s := rs[from:end]
	simple := map[rune]rune{'a': '\a', 'b': '\b', 'e': 0x1b, 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r',
		't': '\t', 'v': '\v', '\\': '\\', '\'': '\'', '"': '"', '?': '?'}
	// digits reads up to n digits of base at s[j:] as one code point.
	digits := func(j, n, base int) (rune, int) {
		v, k := 0, j
		for ; k < len(s) && k-j < n; k++ {
			d, err := strconv.ParseInt(string(s[k]), base, 32)
			if err != nil {
				break
			}
			v = v*base + int(d)
		}
		return rune(v), k
	}
	for j := 0; j < len(s); j++ {
		if s[j] != '\\' || j+1 == len(s) {
			word.WriteRune(s[j])
			continue
		}
		j++
		e := s[j]
		if r, ok := simple[e]; ok {
			word.WriteRune(r)
			continue
		}
		var r rune
		k := j
		switch {
		case e >= '0' && e <= '7':
			r, k = digits(j, 3, 8)
			r &= 0xff // bash keeps the low byte: \544 is "d"
		case e == 'x':
			r, k = digits(j+1, 2, 16)
		case e == 'u':
			r, k = digits(j+1, 4, 16)
		case e == 'U':
			r, k = digits(j+1, 8, 16)
		case e == 'c' && j+1 < len(s):
			n := j + 1
			if s[n] == '\\' && n+1 < len(s) && s[n+1] == '\\' {
				n++ // \c\\ is the control character of one backslash
			}
			r, k = unicode.ToUpper(s[n])&0x1f, n+1
			if s[n] == '?' {
				r = 0x7f
			}
		}
		if k == j || k == j+1 && e != 'c' && (e == 'x' || e == 'u' || e == 'U') {
			word.WriteRune('\\') // not an escape: kept as written
			word.WriteRune(e)
			continue
		}
		if r == 0 {
			break // bash's string ends at a NUL: the rest is dropped
		}
		word.WriteRune(r)
		j = k - 1
	}
	return end, true
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(w string) bool { return assignRE.MatchString(w) }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readOnlyCommands are commands that only read, each with a check of its
// arguments (nil: any arguments).
var readOnlyCommands = map[string]func(args []string) bool{
	"ls": nil, "pwd": nil, "cat": nil, "head": nil, "tail": nil, "wc": nil,
	"echo": nil, "grep": nil, "egrep": nil, "fgrep": nil,
	"which": nil, "whoami": nil, "id": nil, "uname": nil, "stat": nil,
	// printf -v NAME and test -v NAME evaluate an array subscript in NAME,
	// running its command substitutions; file -C writes a compiled magic
	// file.
	"printf": func(a []string) bool { return !shortFlagHas(a, 'v') },
	"test":   func(a []string) bool { return !hasFlag(a, "-v") },
	"[":      func(a []string) bool { return !hasFlag(a, "-v") },
	"file":   func(a []string) bool { return !shortFlagHas(a, 'C') && !longFlag(a, "compile") },
	"du":     nil, "df": nil, "printenv": nil, "basename": nil, "dirname": nil,
	// rg --pre runs a command on every file, --hostname-bin one for
	// hyperlinks; tree -o writes its listing.
	"rg": func(a []string) bool { return !hasFlagPrefix(a, "--pre", "--hostname-bin") },
	// tree -R runs tree again in each directory with -o 00Tree.html.
	"tree":     func(a []string) bool { return !shortFlagHas(a, 'o') && !shortFlagHas(a, 'R') },
	"realpath": nil, "readlink": nil, "diff": nil, "cut": nil, "tr": nil, "true": nil,
	"false": nil, "nl": nil, "md5sum": nil, "sha256sum": nil,
	"date": dateReadOnly,
	// hostname NAME, -F FILE, --file, -b set the host name.
	"hostname": func(a []string) bool {
		return !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(hostnameShows, x) })
	},
	// sort --compress-program runs a program.
	"sort": func(a []string) bool { return !shortFlagHas(a, 'o') && !longFlag(a, "output", "compress-program") },
	// uniq [INPUT [OUTPUT]]: a second operand ("-" counts) is written.
	"uniq": func(a []string) bool { return len(operands(a)) <= 1 },
	"find": func(a []string) bool {
		return !hasFlag(a, "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls")
	},
	"git": func(a []string) bool {
		if len(a) == 0 {
			return false
		}
		switch a[0] {
		case "status", "log", "diff", "show", "ls-files", "rev-parse", "blame", "shortlog", "describe":
			return !hasFlagPrefix(a[1:], "--output")
		case "branch":
			for _, x := range a[1:] {
				if !slices.Contains([]string{"-a", "-r", "-v", "-vv", "--list", "--all", "--remotes", "--show-current"}, x) {
					return false
				}
			}
			return true
		case "remote":
			return len(a) == 1 || len(a) == 2 && a[1] == "-v"
		}
		return false
	},
}

// dateReadOnly reports whether GNU date only shows a date: it sets the
// clock with -s (--set) and with an operand not starting with "+"
// (MMDDhhmm[[CC]YY][.ss]). The values of -d, -f, -r (attached or the next
// word) and of -I (attached only) are no operands.
func dateReadOnly(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return !slices.ContainsFunc(args[i+1:], func(o string) bool { return !strings.HasPrefix(o, "+") })
		case strings.HasPrefix(a, "--"):
			name, _, attached := strings.Cut(a[2:], "=")
			if longFlag([]string{a}, "set") {
				return false
			}
			if !attached && dateTakesValue(name) {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			for k, c := range a[1:] {
				if c == 's' {
					return false
				}
				if c == 'I' {
					break // the rest is its value
				}
				if strings.ContainsRune("dfr", c) {
					if k == len(a)-2 {
						i++ // the next word is its value
					}
					break
				}
			}
		case !strings.HasPrefix(a, "+"):
			return false
		}
	}
	return true
}

// dateTakesValue reports a long option of date, written whole or
// abbreviated, that takes the next word as its value; an abbreviation of
// one without a value too is not taken (getopt refuses it as ambiguous).
func dateTakesValue(name string) bool {
	of := func(names ...string) bool {
		return name != "" && slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, name) })
	}
	return of("date", "file", "reference", "rfc-3339") &&
		!of("debug", "iso-8601", "resolution", "rfc-email", "rfc-822", "rfc-2822", "uct", "universal", "utc", "help", "version")
}

func hasFlag(args []string, flags ...string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(flags, a) })
}

// hostnameShows are the flags with which hostname only shows names.
var hostnameShows = []string{"-s", "-f", "-d", "-i", "-I", "-a", "-A", "-v", "--short", "--fqdn", "--long",
	"--domain", "--ip-address", "--all-ip-addresses", "--all-fqdns", "--alias", "--verbose"}

// longFlag reports a GNU long option naming one of names: written whole or
// abbreviated ("--o" for --output), with or without "=value".
func longFlag(args []string, names ...string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		opt, ok := strings.CutPrefix(a, "--")
		opt, _, _ = strings.Cut(opt, "=")
		return ok && opt != "" && slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, opt) })
	})
}

func hasFlagPrefix(args []string, prefixes ...string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(a, p) })
	})
}

// shortFlagHas reports whether a cluster of short flags (-uo, -ofile)
// has letter: a flag that takes a value may hide in any position.
func shortFlagHas(args []string, letter rune) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], letter)
	})
}

// operands are the arguments that are not flags; "-" (stdin or stdout)
// is one, and so is every argument after "--".
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

func nonFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// readOnlyCmd reports whether one simple command only reads: a known
// read-only command (or none, only redirections), no output redirection
// except to harmless devices, no
// variable assignments (PATH=…; ls, LD_PRELOAD=… cat), and when its
// arguments are checked, none that the shell rewrites (find -{delete,x}).
func readOnlyCmd(c simpleCmd) bool {
	if len(c.assigns) > 0 || c.subst {
		return false
	}
	for _, o := range c.outputs {
		if !slices.Contains(harmlessDevices, o) {
			return false
		}
	}
	if len(c.args) == 0 {
		// Redirections alone: only opening harmless devices (dash reads
		// `grep x f &>/dev/null` as `grep x f &` and `>/dev/null`).
		return len(c.outputs) > 0
	}
	check, ok := readOnlyCommands[c.args[0]]
	return ok && (check == nil || !c.expands && check(c.args[1:]))
}

// shellReadOnly reports whether a whole command line only reads.
func shellReadOnly(command string) bool {
	line, err := parseShell(command)
	if err != nil || line.subst || len(line.cmds) == 0 {
		return false
	}
	for _, c := range line.cmds {
		if !readOnlyCmd(c) {
			return false
		}
	}
	return true
}

// fsCommands are the file-system commands ModeAcceptEdits allows inside
// the working directories. The function returns the paths a command
// writes, or ok=false when it cannot tell.
var fsCommands = map[string]func(args []string) (targets []string, ok bool){
	"mkdir": plainTargets, "touch": plainTargets, "rm": plainTargets,
	"rmdir": plainTargets, "cp": plainTargets, "mv": plainTargets,
	"sed": sedTargets,
}

// sedTargets are the files sed -i edits, when its scripts only edit them
// (plainSedScript) and are given on the command line.
func sedTargets(args []string) ([]string, bool) {
	inPlace := false
	var scripts, operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-i" || a == "--in-place":
			inPlace = true
		case strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "--in-place="):
			// A backup suffix with "/" names another directory.
			if strings.Contains(strings.TrimPrefix(strings.TrimPrefix(a, "--in-place="), "-i"), "/") {
				return nil, false
			}
			inPlace = true
		case a == "-e" || a == "--expression":
			if i++; i == len(args) {
				return nil, false
			}
			scripts = append(scripts, args[i])
		case strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(a, "--expression="))
		case slices.Contains(sedPlainFlags, a):
		case strings.HasPrefix(a, "-") && a != "-":
			return nil, false // -f FILE, and flags not known here
		default:
			operands = append(operands, a)
		}
	}
	if !inPlace {
		return nil, false
	}
	if len(scripts) == 0 {
		if len(operands) == 0 {
			return nil, false
		}
		scripts, operands = operands[:1], operands[1:]
	}
	// sed reads its scripts as one, a line each, as sedScript joins them.
	if !plainSedScript(strings.Join(scripts, "\n")) {
		return nil, false
	}
	return operands, len(operands) > 0
}

// sedPlainFlags change how sed reads its scripts and files, not what it
// runs or writes.
var sedPlainFlags = []string{"-E", "-r", "-n", "-s", "-z", "-u", "--regexp-extended", "--quiet", "--silent",
	"--separate", "--null-data", "--unbuffered", "--posix"}

// plainSedScript reports whether a sed script only edits the lines it is
// given: commands separated by ";" or newlines, each with optional
// addresses, being s/RE/REPL/FLAGS without the e and w flags,
// y/SRC/DST/, a/i/c with their text (to the end of the line), or one of
// d p D P n N g G h H x z =, as sedCommands reads them. Anything else (e,
// w, r, R, W, blocks, comments) is not taken.
func plainSedScript(sc string) bool {
	cmds, ok := sedCommands(sc)
	for _, c := range cmds {
		if strings.IndexByte("syaicdpDPnNgGhHxz=", c.name) < 0 || strings.ContainsAny(c.flags, "ew") {
			return false
		}
	}
	return ok
}

func plainTargets(args []string) ([]string, bool) {
	for _, a := range args {
		// A flag with a value (--target-directory=DIR, -t DIR, -rt DIR)
		// may name what is written: cannot tell.
		if strings.HasPrefix(a, "--") && (strings.Contains(a, "=") || a == "--target-directory") || shortFlagHas([]string{a}, 't') {
			return nil, false
		}
	}
	t := nonFlags(args)
	return t, len(t) > 0
}

// shellExpands reports a word the shell changes before the command sees
// it ($VAR, ${VAR}, `cmd`, ~user), so its path cannot be told here.
func shellExpands(w string) bool {
	return strings.ContainsAny(w, "$`") || strings.HasPrefix(w, "~") && w != "~" && !strings.HasPrefix(w, "~/")
}

// dangerousRemoval reports an rm/rmdir of the root, the home directory or
// a top-level directory.
func dangerousRemoval(c simpleCmd, workingDirs []string) string {
	if len(c.args) == 0 || c.args[0] != "rm" && c.args[0] != "rmdir" {
		return ""
	}
	if why := removalAfterCd(c, workingDirs); why != "" {
		return why
	}
	for _, a := range nonFlags(c.args[1:]) {
		if a == "*" || a == "/*" || a == "~/*" {
			return "it removes everything matching " + a
		}
		if shellExpands(a) {
			return "it removes " + a + ", which the shell expands to a path not known here"
		}
		p := absPath(a, workingDirs)
		if !filepath.IsAbs(p) {
			continue
		}
		if p == "/" || p == home() || filepath.Dir(p) == "/" {
			return "it removes " + p
		}
	}
	return ""
}

// shellSafety returns why a command line needs a safety confirmation, or
// "".
func shellSafety(line shellLine, parseErr error, workingDirs []string) string {
	if parseErr != nil {
		return "the command cannot be parsed (" + parseErr.Error() + ")"
	}
	if line.subst {
		return "the command uses command substitution, which can run any command"
	}
	for _, c := range line.data {
		for _, w := range append([]simpleCmd{c}, wrappedOrNone(c)...) {
			if why := dangerousRemoval(w, workingDirs); why != "" {
				return why + " (in a here-document)"
			}
		}
	}
	if why := scriptBodySafety(line, workingDirs); why != "" {
		return why
	}
	for _, c := range line.cmds {
		c, ok := expanded(c)
		if !ok {
			return "the shell expands " + strings.Join(c.braced, " ") + " into more words than are checked here"
		}
		if why := dangerousRemoval(c, workingDirs); why != "" {
			return why
		}
		inner, err := wrappedIn(c)
		if err != nil && !errors.Is(err, errOpaque) {
			return "a script it runs cannot be parsed (" + err.Error() + ")"
		}
		for _, w := range inner {
			if why := dangerousRemoval(w, workingDirs); why != "" {
				return why
			}
			if why := dangerousWrite(w, workingDirs); why != "" {
				return why // sh -c 'echo x > ~/.bashrc; ls'
			}
		}
		if len(c.args) > 0 {
			name := c.args[0]
			if strings.HasPrefix(name, "mkfs") || name == "dd" && slices.ContainsFunc(c.args, func(a string) bool { return strings.HasPrefix(a, "of=/dev/") }) {
				return "it writes to a raw device"
			}
			if strings.Contains(c.text(), ":(){") {
				return "it is a fork bomb"
			}
		}
		if why := dangerousWrite(c, workingDirs); why != "" {
			return why
		}
	}
	return ""
}

// dangerousWrite says why a command that is not read-only touches a
// dangerous path (an argument that looks like a path, an output
// redirection, or a file an argument names for writing: sort
// -o~/.bashrc), or "". The arguments of a command that is read-only
// but for its output redirections are files it reads: only where it
// writes counts.
func dangerousWrite(c simpleCmd, workingDirs []string) string {
	if readOnlyCmd(c) {
		return ""
	}
	paths := throughLinks(c, writtenPaths(c), workingDirs)
	if r := c; len(c.args) > 0 {
		// A command that only reads but for its redirections reads the
		// paths its arguments name (head -c 9 /dev/urandom > f).
		if r.outputs = nil; !readOnlyCmd(r) {
			paths = append(inDirs(c, pathLikeArgs(withoutPatterns(c.args))), paths...)
		}
	}
	for _, p := range paths {
		if why := dangerousPath(absPath(p, workingDirs)); why != "" {
			return "it touches " + p + ": " + why
		}
	}
	return ""
}

// patternOptions are, for a command, its options whose value, the next
// word, is a pattern it matches names against, not a file it touches
// (rsync --exclude .git, find -path ./.git -prune).
var patternOptions = map[string][]string{
	"rsync":  {"--exclude", "--include"},
	"tar":    {"--exclude"},
	"gtar":   {"--exclude"},
	"bsdtar": {"--exclude"},
	"find":   {"-path", "-ipath", "-name", "-iname", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname"},
}

// withoutPatterns are a command's arguments without its name and the
// values of its patternOptions. Where a command writes (writtenPaths)
// is found apart, from all its words.
func withoutPatterns(args []string) []string {
	opts := patternOptions[args[0]]
	var out []string
	for i := 1; i < len(args); i++ {
		if slices.Contains(opts, args[i]) {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// wrappedOrNone is what wrapped finds, nothing when a script cannot be
// read.
func wrappedOrNone(c simpleCmd) []simpleCmd {
	w, _ := wrappedIn(c)
	return w
}

// maxBraceWords bounds the words a command's brace expansions are
// expanded to for checking.
const maxBraceWords = 256

// expanded is c with its brace expansions done ({a,b} → a b, {1..3} →
// 1 2 3), as the shell will run it; ok is false past maxBraceWords. It
// ignores quotes inside a word that has an unquoted brace expansion, so
// it may make more words than the shell: checks see at least the shell's.
func expanded(c simpleCmd) (simpleCmd, bool) {
	if len(c.braced) == 0 {
		return c, true
	}
	work := maxBraceWork
	var args []string
	for _, a := range c.args {
		if !slices.Contains(c.braced, a) {
			args = append(args, a)
			continue
		}
		ws, ok := expandBraces(a, maxBraceWords-len(args), &work)
		if !ok {
			return c, false
		}
		args = append(args, ws...)
	}
	c.args, c.braced = args, nil
	return c, true
}

// maxBraceWork bounds the characters that expanding one command's braces
// looks at: empty alternatives ({,}{,}…) make 2ⁿ words that are dropped
// and so never reach maxBraceWords, and each unclosed "{" is read to the
// end of its word.
const maxBraceWork = 1 << 22

// expandBraces expands the brace expansions of one word, into at most
// limit words; empty words are dropped, as the shell drops them. work is
// what is left of maxBraceWork: ok is false when it runs out.
func expandBraces(w string, limit int, work *int) ([]string, bool) {
	if *work -= len(w) + 1; limit <= 0 || *work < 0 {
		return nil, false
	}
	for start := 0; start < len(w); start++ {
		if w[start] != '{' {
			continue
		}
		if *work -= len(w) - start; *work < 0 {
			return nil, false // each "{" may be read to the end
		}
		alts, end, ok := braceAlternatives(w, start)
		if !ok {
			return nil, false
		}
		if alts == nil {
			continue
		}
		var out []string
		for _, alt := range alts {
			ws, ok := expandBraces(w[:start]+alt+w[end+1:], limit-len(out), work)
			if !ok {
				return nil, false
			}
			out = append(out, ws...)
		}
		return out, true
	}
	if w == "" {
		return nil, true
	}
	return []string{w}, true
}

// braceAlternatives reads the brace expansion opening at w[start]: its
// alternatives and the index of its closing brace; nil when there is none
// ("{x}", "{}", an unclosed "{"); ok is false for a sequence of more than
// maxBraceWords.
func braceAlternatives(w string, start int) (alts []string, end int, ok bool) {
	depth, from := 0, start+1
	for i := start; i < len(w); i++ {
		switch w[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alts = append(alts, w[from:i])
				from = i + 1
			}
		case '}':
			depth--
			if depth > 0 {
				continue
			}
			if alts != nil {
				return append(alts, w[from:i]), i, true
			}
			alts, ok := braceRange(w[start+1 : i])
			return alts, i, ok
		}
	}
	return nil, 0, true
}

// braceRange expands a sequence expression (1..5, a..e, 1..10..2); nil
// when body is not one, ok false when it makes more than maxBraceWords.
func braceRange(body string) (alts []string, ok bool) {
	parts := strings.Split(body, "..")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, true
	}
	step := 1
	if len(parts) == 3 {
		n, err := strconv.Atoi(parts[2])
		if err != nil {
			return nil, true
		}
		step = max(n, -n, 1)
	}
	from, errA := strconv.Atoi(parts[0])
	to, errB := strconv.Atoi(parts[1])
	chars := errA != nil || errB != nil
	if chars {
		if len(parts[0]) != 1 || len(parts[1]) != 1 {
			return nil, true
		}
		from, to = int(parts[0][0]), int(parts[1][0])
	}
	const far = 1 << 40 // bash takes up to 64 bits; the difference must not overflow
	if from < -far || from > far || to < -far || to > far || max(from-to, to-from)/step >= maxBraceWords {
		return nil, false
	}
	var out []string
	for i := from; ; {
		if chars {
			out = append(out, string(rune(i)))
		} else {
			out = append(out, strconv.Itoa(i))
		}
		if i == to || (from < to && i+step > to) || (from > to && i-step < to) {
			return out, true
		}
		if from < to {
			i += step
		} else {
			i -= step
		}
	}
}

// pathLikeArgs are the arguments that look like paths.
func pathLikeArgs(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.ContainsRune(a, '/') || strings.HasPrefix(a, ".") || strings.HasPrefix(a, "~") {
			out = append(out, a)
		}
	}
	return out
}

// shellEditsInside reports whether every command of the line is read-only
// or a file-system command whose targets (and output redirections) all lie
// inside the working directories, with at least one such target.
func shellEditsInside(line shellLine, workingDirs []string) bool {
	if len(workingDirs) == 0 || line.subst || len(line.cmds) == 0 {
		return false
	}
	edits := 0
	for _, c := range line.cmds {
		if readOnlyCmd(c) {
			continue
		}
		c, ok := expanded(c)
		if !ok || len(c.args) == 0 || len(c.assigns) > 0 || c.dollar {
			return false // the shell makes words not known here (a sed script)
		}
		fn, ok := fsCommands[c.args[0]]
		if !ok {
			return false
		}
		targets, ok := fn(c.args[1:])
		if !ok {
			return false
		}
		for _, p := range append(targets, c.outputs...) {
			if shellExpands(p) || !inWorkingDirs(absPath(p, workingDirs), workingDirs) {
				return false
			}
		}
		edits++
	}
	return edits > 0
}

// matchCommand matches a shell rule pattern against one simple command's
// text: "prefix:*" or "prefix *" matches the prefix as whole words, a
// pattern with another "*" is a wildcard over the whole text, and any
// other pattern must equal the text.
func matchCommand(pattern, cmd string) bool {
	for _, suffix := range []string{":*", " *"} {
		if p, ok := strings.CutSuffix(pattern, suffix); ok {
			p = strings.Join(strings.Fields(p), " ")
			return cmd == p || strings.HasPrefix(cmd, p+" ")
		}
	}
	if strings.Contains(pattern, "*") {
		return matchStars(strings.Split(pattern, "*"), cmd)
	}
	return cmd == strings.Join(strings.Fields(pattern), " ")
}

// namesInner reports whether a shell allow pattern that matches outer,
// a command, names the words of inner, a command outer runs that its
// words end with, up to inner's name at least: "sudo rm:*" (or "sudo
// rm *", or "sudo rm -rf x" itself) for "sudo rm -rf x" running "rm
// -rf x", where "sudo:*" names only sudo. A pattern without "*" that
// matches outer names all it runs; other wildcards name nothing.
func namesInner(pattern, outer, inner string) bool {
	if !matchCommand(pattern, outer) || inner == "" {
		return false
	}
	if !strings.Contains(pattern, "*") {
		return true // the whole command, as written, names all it runs
	}
	prefix, ok := strings.CutSuffix(pattern, ":*")
	if !ok {
		prefix, ok = strings.CutSuffix(pattern, " *")
	}
	if !ok || !strings.HasSuffix(outer, " "+inner) {
		return false
	}
	prefix = strings.Join(strings.Fields(prefix), " ")
	return len(prefix) > len(outer)-len(inner)
}

// matchStars reports whether s is parts joined by runs of any text
// (newlines too, of a quoted argument): s starts with the first part,
// ends with the last, and has the others in order between them, each
// found at its leftmost place (which leaves the most room to the rest).
// It costs about the length of s, whatever the number of parts, and
// takes any bytes.
func matchStars(parts []string, s string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	if !strings.HasSuffix(s, last) {
		return false
	}
	s = s[:len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

var subcommandRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// suggestPrefix is the rule prefix suggested for a command: its
// assignments, its name, and its sub-command when the second word is a
// plain word ("npm install").
func suggestPrefix(c simpleCmd) string {
	if len(c.args) == 0 {
		return ""
	}
	p := strings.Join(append(slices.Clone(c.assigns), c.args[0]), " ")
	if len(c.args) > 1 && subcommandRE.MatchString(c.args[1]) {
		p += " " + c.args[1]
	}
	return p + ":*"
}
