package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/toolbus/toolbus/internal/regularfile"
	"github.com/toolbus/toolbus/toolkit"
)

const filePathDoc = "The path of the file: relative to the workspace directory, or absolute inside it."

const rangesDoc = "The lines to %s, [start, end], 1-based and inclusive (e.g. [1, 100] for lines 1 to 100). " +
	"Negative numbers count from the end: [-100, -1] is the last 100 lines."

// Ranges are taken as any JSON list and checked by the tools, which
// answer a malformed one as AgentScope's do (ranges.go).
type viewInput struct {
	FilePath string          `json:"file_path" jsonschema:"The path of the file: relative to the workspace directory, or absolute inside it."`
	Ranges   json.RawMessage `json:"ranges,omitempty"`
}

type writeInput struct {
	FilePath string          `json:"file_path"`
	Content  string          `json:"content" jsonschema:"The content to write."`
	Ranges   json.RawMessage `json:"ranges,omitempty"`
}

type insertInput struct {
	FilePath   string `json:"file_path"`
	Content    string `json:"content" jsonschema:"The content to insert."`
	LineNumber int    `json:"line_number" jsonschema:"The line the content is inserted before, starting from 1; a line break follows the content. The number of lines plus one appends a line break and then the content to the end of the file."`
}

// files holds what the file tools share.
type files struct {
	ws        *workspace
	sessions  bool // each session has its own sub-directory of ws
	maxFile   int64
	maxOutput int
	edits     fileLocks // one edit of a file at a time
	swept     sweeps    // when killed edits' temporary files were looked for
}

// fileLocks orders the edits of each file: an edit reads the file and
// replaces it with a changed copy, so two at once would each drop what
// the other put there. A file is known by its path with every symlink
// resolved, so edits through a link wait for those of its target. Only
// this worker's edits are ordered here; those of a shared workspace's
// other workers are by a lock on the file (lockShared), and the shell
// can still change a file under an edit. A wait ends
// with the call's context: an edit stuck in the file system (a network
// one) holds its file, not the calls behind it.
type fileLocks struct {
	mu sync.Mutex
	m  map[string]*fileLock
}

type fileLock struct {
	held  chan struct{} // one token: the edit that holds it
	users int           // holders and waiters; the entry goes with the last
}

// lock waits for the edits of the file at path to end, or for ctx to
// end, and returns the function that lets the next one go.
func (l *fileLocks) lock(ctx context.Context, path string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*fileLock{}
	}
	e := l.m[path]
	if e == nil {
		e = &fileLock{held: make(chan struct{}, 1)}
		l.m[path] = e
	}
	e.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, path)
		}
		l.mu.Unlock()
	}
	select {
	case e.held <- struct{}{}: // free: an ended context does not refuse it
	default:
		select {
		case e.held <- struct{}{}:
		case <-ctx.Done():
			leave()
			return nil, ctx.Err()
		}
	}
	return func() {
		<-e.held
		leave()
	}, nil
}

func (f *files) viewTool() *toolkit.Tool {
	t := toolkit.Func(ViewTextFile,
		"View the content of a text file with line numbers, optionally only a range of lines. "+
			"Without ranges the whole file is returned.",
		f.view)
	describe(t, "file_path", filePathDoc)
	rangesProp(t, "view")
	return t
}

func (f *files) writeTool() *toolkit.Tool {
	t := toolkit.Func(WriteTextFile,
		"Create, overwrite or partly replace a text file. With ranges, only those lines are replaced "+
			"by the content; without, the whole file is overwritten (or created, with its parent directories).",
		f.write)
	describe(t, "file_path", filePathDoc)
	rangesProp(t, "replace")
	return t
}

func (f *files) insertTool() *toolkit.Tool {
	t := toolkit.Func(InsertTextFile, "Insert content into an existing text file before the given line.", f.insert)
	describe(t, "file_path", filePathDoc)
	return t
}

func (f *files) view(ctx context.Context, in viewInput) (string, error) {
	text, err := f.readText(ctx, in.FilePath)
	if err != nil {
		return "", err
	}
	given, r, pair, err := viewRanges(in.Ranges)
	if err != nil {
		return "", err
	}
	n := countLines(text)
	if n == 0 { // whatever the ranges: there are no lines to show
		return fmt.Sprintf("The file %s is empty.", shown(in.FilePath)), nil
	}
	start, end := 1, n
	if pair {
		if r[0] > n {
			return "", toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentError: The range '%s' is out of bounds for the file '%s', which has only %d lines.",
				pyStr(in.Ranges), shown(in.FilePath), n)
		}
		if start, end, err = lineRange(r, n, false); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	switch {
	case !given:
		fmt.Fprintf(&b, "The content of %s:\n```\n", shown(in.FilePath))
	default:
		fmt.Fprintf(&b, "The content of %s in %s lines:\n```\n", shown(in.FilePath), pyStr(in.Ranges))
	}
	return f.showLines(&b, text, start, end, start), nil
}

// showLines writes lines start to end of text into b, numbered, and closes
// the code block b opened; past the output limit (which counts what b
// holds) it stops there, with a note of the lines not shown. Line must
// (the first asked for, or changed) is shown cut when it does not fit,
// or ranges would never show any of it.
func (f *files) showLines(b *strings.Builder, text string, start, end, must int) string {
	off := lineOffset(text, start)
	for i := start; i <= end; i++ {
		raw := nextLine(text[off:])
		off += len(raw)
		line := numbered(i, raw)
		if f.maxOutput > 0 && b.Len()+len(line) > f.maxOutput {
			if i <= must {
				cut := max(f.maxOutput-b.Len(), 0)
				for cut > 0 && cut < len(line) && !utf8.RuneStart(line[cut]) {
					cut--
				}
				fmt.Fprintf(b, "%s\n```\n[Line %d is cut after %d of its %d bytes: the output limit of %d bytes was reached.", line[:cut], i, cut, len(line), f.maxOutput)
				if i < end {
					fmt.Fprintf(b, " Lines %d-%d are not shown; view them with ranges.", i+1, end)
				}
				b.WriteString("]")
				return b.String()
			}
			fmt.Fprintf(b, "```\n[Lines %d-%d are not shown: the output limit of %d bytes was reached. View them with ranges.]", i, end, f.maxOutput)
			return b.String()
		}
		b.WriteString(line)
	}
	b.WriteString("```")
	return b.String()
}

func (f *files) write(ctx context.Context, in writeInput) (string, error) {
	if err := hasNUL(in.Content); err != nil {
		return "", err
	}
	if err := f.fits(in.FilePath, in.Content); err != nil {
		return "", err
	}
	root, rel, done, err := f.openForEdit(ctx, in.FilePath, true)
	if err != nil {
		return "", err
	}
	defer done()
	fi, err := root.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return "", pathError(in.FilePath, err)
			}
		}
		if err := create(root, rel, in.Content); err != nil {
			return "", editError(in.FilePath, err, false)
		}
		msg := fmt.Sprintf("Create and write %s successfully.", shown(in.FilePath))
		if truthy(in.Ranges) {
			msg += fmt.Sprintf(" The ranges %s is ignored because the file does not exist.", pyStr(in.Ranges))
		}
		return msg, nil
	case err != nil:
		return "", pathError(in.FilePath, err)
	}
	if err := regular(in.FilePath, fi); err != nil {
		return "", err
	}
	if isNull(in.Ranges) {
		if err := replace(root, rel, in.Content); err != nil {
			return "", editError(in.FilePath, err, true)
		}
		return fmt.Sprintf("Overwrite %s successfully.", shown(in.FilePath)), nil
	}
	r, ok := pairOf(in.Ranges)
	if !ok {
		return "", toolkit.Errorf(toolkit.CodeInvalidInput, "Error: Invalid range format. Expected a list of two integers, but got %s.", pyStr(in.Ranges))
	}
	text, err := f.readFrom(root, rel, in.FilePath, true)
	if err != nil {
		return "", err
	}
	if n := countLines(text); r[0] > n+1 {
		return "", toolkit.Errorf(toolkit.CodeInvalidInput, "Error: The start line %d is invalid. The file only has %d lines.", r[0], n)
	}
	if err := ordered(r); err != nil {
		return "", err
	}
	start, end, err := lineRange(r, countLines(text), true)
	if err != nil {
		return "", err
	}
	out, first, last := splice(text, start, end, in.Content)
	if err := f.fits(in.FilePath, out); err != nil {
		return "", err
	}
	if err := replace(root, rel, out); err != nil {
		return "", editError(in.FilePath, err, true)
	}
	// The content with 5 lines around it (a deletion's: around where the
	// lines were), as AgentScope shows it.
	n := countLines(out)
	return fmt.Sprintf("Write %s successfully. The new content snippet:\n", shown(in.FilePath)) +
		f.snippet(out, max(1, first-5), min(last+5, n), first), nil
}

func (f *files) insert(ctx context.Context, in insertInput) (string, error) {
	if in.LineNumber <= 0 {
		// Before the file is looked at, as AgentScope does.
		return "", toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentsError: The line number %d is invalid. ", in.LineNumber)
	}
	if err := hasNUL(in.Content); err != nil {
		return "", err
	}
	// Of a file that does not exist there is nothing to insert into: a
	// session without a directory is not given one.
	root, rel, done, err := f.openForEdit(ctx, in.FilePath, false)
	if err != nil {
		return "", err
	}
	defer done()
	if root == nil {
		return "", toolkit.Errorf(toolkit.CodeToolError, "InvalidArgumentsError: The target file %s does not exist. ", shown(in.FilePath))
	}
	if _, err := root.Stat(rel); errors.Is(err, fs.ErrNotExist) {
		return "", toolkit.Errorf(toolkit.CodeToolError, "InvalidArgumentsError: The target file %s does not exist. ", shown(in.FilePath))
	}
	text, err := f.readFrom(root, rel, in.FilePath, true)
	if err != nil {
		return "", err
	}
	n := countLines(text)
	if in.LineNumber > n+1 {
		return "", toolkit.Errorf(toolkit.CodeInvalidInput,
			"InvalidArgumentsError: The given line_number (%d) is not in the valid range [1, %d].", in.LineNumber, n+1)
	}
	out := insertLine(text, in.LineNumber, in.Content)
	if err := f.fits(in.FilePath, out); err != nil {
		return "", err
	}
	if err := replace(root, rel, out); err != nil {
		return "", editError(in.FilePath, err, true)
	}
	// AgentScope's view: 5 lines before line_number, and 5 past it plus
	// the lines the file gained.
	m := countLines(out)
	from, to := max(1, in.LineNumber-5), min(in.LineNumber+m-n+5, m)
	return fmt.Sprintf("Insert content into %s at line %d successfully. The new content between lines %d-%d is:\n%s",
		shown(in.FilePath), in.LineNumber, from, to, f.snippet(out, from, to, in.LineNumber)), nil
}

// insertLine inserts content into text as AgentScope's insert_text_file
// does: before line (1-based) followed by a line break, or, at the
// number of lines plus one, after a line break, at the end (so after a
// last line that ends with its break an empty line comes first). The
// breaks it writes are the file's, as splice's; a byte order mark stays
// first.
func insertLine(text string, line int, content string) string {
	eol := eolOf(text)
	content = breaksAs(content, eol)
	if line == countLines(text)+1 {
		return text + eol + content
	}
	off := lineOffset(text, line)
	head, tail := text[:off], text[off:]
	if line == 1 && strings.HasPrefix(text, bom) {
		head, tail = bom, strings.TrimPrefix(tail, bom)
		content = strings.TrimPrefix(content, bom)
	}
	return head + content + eol + tail
}

// eolOf is the line break of text: its first line's ("\r\n", or a lone
// "\r"), else "\n".
func eolOf(text string) string {
	if i, w := lineBreak(text); i >= 0 {
		return text[i : i+w]
	}
	return "\n"
}

// breaksAs writes content's line breaks as eol, so that an edit keeps the
// file's one kind of break; in a file of "\n" breaks (or none) content
// is written as it is, as AgentScope writes it.
func breaksAs(content, eol string) string {
	if eol == "\n" || strings.IndexByte(content, '\r') < 0 && strings.IndexByte(content, '\n') < 0 {
		return content
	}
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\r", "\n")
	return strings.ReplaceAll(content, "\n", eol)
}

// open resolves p in the call's workspace and returns the workspace's
// root, which the caller releases; rel is p's path below it, and real
// the workspace's own path. create makes a session's directory that is
// missing, once p is found fit to use there (a write refused for its
// path, naming the session's directory itself or a name too long for
// the system, makes none); without
// it, root is nil for a session that has none.
func (f *files) open(ctx context.Context, p string, create bool) (root *os.Root, rel, real string, release func(), err error) {
	ws, root, release, err := f.ws.forSession(ctx, f.sessions, false)
	if err != nil {
		return nil, "", "", nil, err
	}
	if root == nil && create {
		if rel, err := ws.resolve(p); err != nil {
			return nil, "", "", nil, err
		} else if rel == "." {
			// The session's directory itself, once made: no file.
			return nil, "", "", nil, isDir(p)
		} else if err := namesFit(p, rel); err != nil {
			return nil, "", "", nil, err
		}
		if ws, root, release, err = f.ws.forSession(ctx, f.sessions, true); err != nil {
			return nil, "", "", nil, err
		}
	}
	if rel, err = ws.resolve(p); err != nil {
		release()
		return nil, "", "", nil, err
	}
	return root, rel, ws.real, release, nil
}

// openForEdit is open for a tool that changes the file: it also waits
// for the file's other edits to end, this worker's (fileLocks) and then
// those of the other workers of a shared workspace (lockShared). The
// caller calls done when its own has; done then removes what killed
// edits left in the file's directory (sweepTemps). As open, without
// create it returns a nil root for a session that has no directory.
func (f *files) openForEdit(ctx context.Context, p string, create bool) (root *os.Root, rel string, done func(), err error) {
	root, rel, real, release, err := f.open(ctx, p, create)
	if err != nil {
		return nil, "", nil, err
	}
	if root == nil {
		return nil, rel, release, nil
	}
	unlock, err := f.edits.lock(ctx, filepath.Join(real, rel))
	if err != nil {
		release()
		return nil, "", nil, err
	}
	unlockShared, err := lockShared(ctx, root, rel)
	if err != nil {
		unlock()
		release()
		if errors.Is(err, errLocked) {
			return nil, "", nil, toolkit.Errorf(toolkit.CodeUnavailable,
				"FileBusyError: %q stayed locked by another process for %v: not an edit of another worker, which takes a moment, but a program holding a lock on it. Nothing was written; try again once it is done.",
				p, sharedLockWait)
		}
		return nil, "", nil, err
	}
	return root, rel, func() {
		unlockShared()
		unlock()
		f.swept.sweepTemps(root, real, filepath.Dir(rel))
		release()
	}, nil
}

// readText reads a text file of the workspace for viewing. The tools
// work on the text by byte offsets, never on a slice of its lines, so
// that a call costs a few times the file's size whatever its lines (a
// slice costs 16 bytes a line on top of them).
func (f *files) readText(ctx context.Context, p string) (string, error) {
	root, rel, _, release, err := f.open(ctx, p, false)
	if err != nil {
		return "", err
	}
	defer release()
	if root == nil { // a session without a directory: nothing exists
		if rel == "." {
			return "", toolkit.Errorf(toolkit.CodeToolError, "Error: The path %s is not a file.", shown(p))
		}
		return "", toolkit.Errorf(toolkit.CodeToolError, "Error: The file %s does not exist.", shown(p))
	}
	return f.readFrom(root, rel, p, false)
}

// readFrom reads the text file rel of root, which the model named p.
// forEdit words the error for a missing file for the tools that edit;
// for viewing, a missing file and a directory are refused in
// AgentScope's view_text_file's words.
func (f *files) readFrom(root *os.Root, rel, p string, forEdit bool) (string, error) {
	isRegular := func(fi fs.FileInfo) error {
		if fi.IsDir() && !forEdit {
			return toolkit.Errorf(toolkit.CodeToolError, "Error: The path %s is not a file.", shown(p))
		}
		return regular(p, fi)
	}
	// Look first, so that a socket or a device is named rather than
	// failing to open; then open without blocking (opening a named pipe
	// must not wait for a writer, and a call stuck in open keeps its OS
	// thread) and check what was opened, so a swap after the first look
	// cannot slip a pipe in.
	if fi, err := root.Stat(rel); err == nil {
		if err := isRegular(fi); err != nil {
			return "", err
		}
	}
	file, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case !errors.Is(err, fs.ErrNotExist):
		case forEdit:
			return "", toolkit.Errorf(toolkit.CodeToolError, "FileError: %q does not exist. Create it with %s first.", p, WriteTextFile)
		default:
			return "", toolkit.Errorf(toolkit.CodeToolError, "Error: The file %s does not exist.", shown(p))
		}
		return "", pathError(p, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return "", pathError(p, err)
	}
	if err := isRegular(fi); err != nil {
		return "", err
	}
	if fi.Size() > f.maxFile {
		return "", toolkit.Errorf(toolkit.CodeToolError, "FileTooLargeError: %q is %d bytes, over the limit of %d bytes for text files.", p, fi.Size(), f.maxFile)
	}
	// To the end, whatever the size said: a file of /proc says 0, and a
	// file being appended to grows while it is read. The limit applies
	// to what is read: a byte past it tells a file over it (not past
	// math.MaxInt64, where the bound would turn negative and read none).
	// The size is reserved at once up to 64 MiB (one allocation, no
	// copy); past it the text grows as it is read, and a NUL ends the
	// read: a sparse file of a terabyte, under a limit as large, is
	// binary after its first block, not a reservation the process dies of.
	b := textOnly{new(strings.Builder)}
	b.Grow(int(min(fi.Size(), reserveAtOnce)) + 1)
	if _, err := io.Copy(b, io.LimitReader(file, min(f.maxFile, math.MaxInt64-1)+1)); err != nil {
		if errors.Is(err, errNUL) {
			return "", toolkit.Errorf(toolkit.CodeToolError, "BinaryFileError: %q looks like a binary file (it contains NUL bytes); the text file tools cannot show or edit it.", p)
		}
		return "", pathError(p, err)
	}
	if int64(b.Len()) > f.maxFile {
		return "", toolkit.Errorf(toolkit.CodeToolError, "FileTooLargeError: %q is over the limit of %d bytes for text files.", p, f.maxFile)
	}
	return b.String(), nil
}

// reserveAtOnce is the most of a file's size a read reserves before
// reading.
const reserveAtOnce = 64 << 20

// errNUL ends the read of a file holding a NUL byte.
var errNUL = errors.New("a NUL byte")

// textOnly collects a text file, refusing the first write holding a NUL.
type textOnly struct{ *strings.Builder }

func (t textOnly) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, 0) >= 0 {
		return 0, errNUL
	}
	return t.Builder.Write(p)
}

// editError is pathError for a failed create or replace, saying what
// became of the file (existed: there was one to keep).
func editError(p string, err error, existed bool) error {
	e := pathError(p, err)
	var te *toolkit.Error
	if !errors.As(e, &te) || te.Code == toolkit.CodeDenied {
		return e
	}
	var partial partialError
	switch {
	case errors.As(err, &partial):
		te.Message += " The file was being written in place (its directory refuses a replacement) and may hold part of the new content: view it before editing it again."
	case existed:
		te.Message += " Nothing was written: the file is as it was."
	default:
		te.Message += " Nothing was written."
	}
	return te
}

// fits refuses to write a file the file tools would then refuse to read:
// one over the size limit.
func (f *files) fits(p, content string) error {
	if int64(len(content)) > f.maxFile {
		return toolkit.Errorf(toolkit.CodeInvalidInput,
			"FileTooLargeError: %q would be %d bytes, over the limit of %d bytes for text files; the file tools could not read it back. Nothing was written.",
			p, len(content), f.maxFile)
	}
	return nil
}

// hasNUL refuses content the file tools would then refuse to read as
// binary.
func hasNUL(content string) error {
	if strings.IndexByte(content, 0) >= 0 {
		return toolkit.NewError(toolkit.CodeInvalidInput,
			"InvalidArgumentsError: content contains a NUL byte, which makes a binary file the text file tools cannot read back. Nothing was written.")
	}
	return nil
}

// countLines is the number of lines of s: each ends after a line break,
// and the last may lack one. A line break is "\n", "\r\n" or a lone
// "\r", as Python's universal newlines, in which AgentScope reads files,
// have it. A byte order mark is the file's, not a line: a file of a mark
// alone has none.
func countLines(s string) int {
	s = strings.TrimPrefix(s, bom)
	n := strings.Count(s, "\n") + strings.Count(s, "\r") - strings.Count(s, "\r\n")
	if s != "" && !endsLine(s) {
		n++
	}
	return n
}

// lineBreak is where the first line break of s starts, and its width;
// -1 when s has none.
func lineBreak(s string) (i, width int) {
	i = strings.IndexAny(s, "\r\n")
	switch {
	case i < 0:
		return -1, 0
	case s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
		return i, 2
	}
	return i, 1
}

// endsLine reports whether s ends with a line break.
func endsLine(s string) bool {
	return strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\r")
}

// lineOffset is where line i (1-based) of s starts; len(s) past its last
// line.
func lineOffset(s string, i int) int {
	off := 0
	for ; i > 1; i-- {
		j, w := lineBreak(s[off:])
		if j < 0 {
			return len(s)
		}
		off += j + w
	}
	return off
}

// nextLine is the line s starts with, with its line break.
func nextLine(s string) string {
	if j, w := lineBreak(s); j >= 0 {
		return s[:j+w]
	}
	return s
}

// lineRange checks [start, end] against a file of n lines and returns
// 1-based inclusive bounds. Negative numbers count from the end; an end
// past the last line is clamped, and so, for viewing, is a negative
// start before the first ([-100, -1] of a shorter file is all of it).
// For edits, start may be n+1 (append).
func lineRange(r [2]int, n int, forEdit bool) (start, end int, err error) {
	conv := func(v int) int {
		if v < 0 {
			return n + v + 1
		}
		return v
	}
	start, end = conv(r[0]), conv(r[1])
	if !forEdit && r[0] < 0 {
		start = max(start, 1)
	}
	limit := n
	if forEdit {
		limit = n + 1
	}
	switch {
	case r[0] == 0 || r[1] == 0:
		return 0, 0, toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentsError: ranges %s: line numbers start at 1 (or -1 for the last line); 0 is not a line.", pyPair(r))
	case start < 1 || end < 1:
		return 0, 0, toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentsError: ranges %s: the file has only %d lines.", pyPair(r), n)
	case start > limit:
		return 0, 0, toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentsError: ranges %s start after the end of the file, which has %d lines.", pyPair(r), n)
	case end < start:
		return 0, 0, startAfterEnd(r)
	}
	return start, min(end, n), nil
}

// splice replaces lines start to end of text (1-based, inclusive; end =
// start-1 inserts) with content, keeping line breaks intact on both sides.
// It returns the new text and the 1-based span the content now occupies.
// The breaks it writes are the file's: in a file whose first line ends
// with "\r\n" (or a lone "\r"), the content's breaks become that too. A byte order
// mark is the file's, not its first line's: it stays first.
func splice(text string, start, end int, content string) (out string, first, last int) {
	head, tail := text[:lineOffset(text, start)], text[lineOffset(text, end+1):]
	mark := ""
	if start == 1 && strings.HasPrefix(text, bom) {
		mark = bom
		tail = strings.TrimPrefix(tail, bom) // an insert before line 1
		content = strings.TrimPrefix(content, bom)
	}
	eol := eolOf(text)
	content = breaksAs(content, eol)
	var b strings.Builder
	b.Grow(len(mark) + len(head) + len(content) + len(tail) + 2)
	b.WriteString(mark)
	b.WriteString(head)
	if head != "" && content != "" && !endsLine(head) {
		b.WriteString(eol) // appending after a last line without a line break
	}
	b.WriteString(content)
	if tail != "" && content != "" && !endsLine(content) {
		b.WriteString(eol)
	}
	b.WriteString(tail)
	return b.String(), start, start + countLines(content) - 1
}

// bom is the UTF-8 byte order mark, which some editors put at the start
// of a file.
const bom = "\uFEFF"

// snippet shows lines from to to of text, in a code block; line must
// (the first changed) is shown, cut if need be, whatever the output
// limit.
func (f *files) snippet(text string, from, to, must int) string {
	var b strings.Builder
	b.WriteString("```\n")
	return f.showLines(&b, text, from, to, min(must, to))
}

// numbered is line i as shown to the model: "i: text\n". A file need not
// be UTF-8, but what is sent is (a msgpack str must be, for clients in
// other languages): an invalid byte is shown as U+FFFD, as the shell
// tool's output is. Edits splice the file's own lines, so its bytes are
// kept.
func numbered(i int, line string) string {
	if j, _ := lineBreak(line); j >= 0 {
		line = line[:j] // its break, whichever, is shown as "\n", as AgentScope shows it
	}
	return fmt.Sprintf("%d: %s\n", i, strings.ToValidUTF8(line, "\uFFFD"))
}

// shown is the path p as the answers name it: valid UTF-8, as the lines
// of a file are (numbered). The errors quote it (%q), which escapes what
// is not.
func shown(p string) string {
	return strings.ToValidUTF8(p, "\uFFFD")
}

// isDir is the error of a file tool given p, a directory.
func isDir(p string) error {
	return toolkit.Errorf(toolkit.CodeToolError, "FileError: %q is a directory, not a regular file.", p)
}

// regular refuses anything but a regular file, saying what it is.
func regular(p string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return isDir(p)
	case !fi.Mode().IsRegular():
		return toolkit.Errorf(toolkit.CodeToolError, "FileError: %q is %s, not a regular file; the file tools read and write regular files only.", p, regularfile.Kind(fi.Mode()))
	}
	return nil
}
