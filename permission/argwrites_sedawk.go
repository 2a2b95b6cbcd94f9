package permission

import (
	"cmp"
	"slices"
	"strings"
)

// programWrites are the files the sed script or the awk programs of a
// sed or awk command (name) write, given its words after its name: sed's
// w and W commands and s///w (sedWrites), awk's print and printf
// redirections (awkWrites) and gawk's own (gawkFiles). A script or program read from a file is
// opaque (toolRuns) and not read here.
func programWrites(name string, words []string) []string {
	if slices.Contains(seds, name) {
		script, _ := sedScript(words)
		return sedWrites(script)
	}
	programs, _ := awkPrograms(words)
	out := gawkFiles(words)
	for _, p := range programs {
		out = append(out, awkWrites(p)...)
	}
	return out
}

// awkWrites are the files an awk program's print and printf statements
// write to (print > "FILE", print >> "FILE"): a ">" outside parentheses
// in such a statement is a redirection, not a comparison. A target that
// is not one string ("dir/" $1, a variable) is unknownFile. Strings,
// regular expressions and comments are skipped, as awkRuns skips them.
func awkWrites(prog string) []string {
	var out []string
	operand := false // the last token ends an operand: "/" divides
	printing := false
	depth := 0 // parentheses and brackets opened since print
	// str reads past the string or regular expression prog[i] opens;
	// it returns the index of its closing character.
	str := func(i int) int {
		c := prog[i]
		bracket := false
		for i++; i < len(prog) && (prog[i] != c || bracket); i++ {
			switch {
			case prog[i] == '\\':
				i++
			case c == '/' && prog[i] == '[':
				bracket = true
			case prog[i] == ']':
				bracket = false
			}
		}
		return i
	}
	for i := 0; i < len(prog); i++ {
		c := prog[i]
		switch {
		case c == ' ' || c == '\t' || c == '\\' && i+1 < len(prog) && prog[i+1] == '\n':
			if c == '\\' {
				i++
			}
		case c == '#':
			for i+1 < len(prog) && prog[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '/' && !operand:
			i = str(i)
			operand = true
		case c == '>' && printing && depth == 0 && !strings.HasPrefix(prog[i+1:], "="):
			if strings.HasPrefix(prog[i+1:], ">") {
				i++
			}
			j := i + 1
			for j < len(prog) && (prog[j] == ' ' || prog[j] == '\t') {
				j++
			}
			target := unknownFile
			if j < len(prog) && prog[j] == '"' {
				end := str(j)
				rest := strings.TrimLeft(prog[min(end+1, len(prog)):], " \t")
				name := prog[j+1 : min(end, len(prog))]
				if end < len(prog) && !strings.Contains(name, `\`) && (rest == "" || strings.ContainsRune(";\n}#", rune(rest[0]))) {
					target = name
				}
			}
			out = append(out, target)
			printing, operand = false, false
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(prog) && (prog[j] == '_' || prog[j] >= 'a' && prog[j] <= 'z' || prog[j] >= 'A' && prog[j] <= 'Z' || prog[j] >= '0' && prog[j] <= '9') {
				j++
			}
			word := prog[i:j]
			if word == "print" || word == "printf" {
				printing, depth = true, 0
			}
			operand = !slices.Contains(awkKeywords, word)
			i = j - 1
		case c == '(' || c == '[':
			depth++
			operand = false
		case c == ')' || c == ']':
			depth--
			operand = true
		case c >= '0' && c <= '9' || c == '.':
			operand = true
		case c == ';' || c == '\n' || c == '{' || c == '}':
			// A statement ends (a newline after "," or "&&" does not).
			if c != '\n' || !strings.HasSuffix(strings.TrimRight(prog[:i], " \t"), ",") {
				printing = false
			}
			operand = false
		default:
			operand = false
		}
	}
	return out
}

// gawkOutputs are gawk's options that write a file, short and long,
// with the file written when none is given.
var gawkOutputs = []struct {
	short     byte
	long, def string
}{{'d', "--dump-variables", "awkvars.out"}, {'o', "--pretty-print", "awkprof.out"}, {'p', "--profile", "awkprof.out"}}

// gawkFiles are the files gawk writes for its options, given its words
// after its name: those of -d (--dump-variables), -o (--pretty-print)
// and -p (--profile), whose value is only the rest of the word, or
// without one awkvars.out or awkprof.out; read up to its program, as
// awkOptions reads them (an abbreviation as any option it may stand for).
func gawkFiles(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		a := words[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		if name, v, has := strings.Cut(a, "="); strings.HasPrefix(name, "--") {
			for _, o := range gawkOutputs {
				if len(name) > 2 && strings.HasPrefix(o.long, name) {
					out = append(out, cmp.Or(v, o.def))
				}
			}
			if !has && awkOptions.longName(name) != "" {
				i++ // its value
			}
			continue
		}
	letters:
		for k := 1; k < len(a); k++ {
			for _, o := range gawkOutputs {
				if a[k] == o.short {
					out = append(out, cmp.Or(a[k+1:], o.def))
					break letters
				}
			}
			if strings.IndexByte(awkOptions.short, a[k]) >= 0 {
				if k+1 == len(a) {
					i++ // its value
				}
				break
			}
		}
	}
	return out
}
