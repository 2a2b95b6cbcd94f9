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
// regular expressions and comments are skipped (awkTokens).
func awkWrites(prog string) []string {
	var out []string
	printing := false
	depth := 0 // parentheses and brackets opened since print
	toks := awkTokens(prog)
	for k, t := range toks {
		switch t {
		case "print", "printf":
			printing, depth = true, 0
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ";", "{", "}", "\n":
			// A statement ends (a newline after "," does not).
			if t != "\n" || k == 0 || toks[k-1] != "," {
				printing = false
			}
		case ">", ">>":
			if !printing || depth != 0 {
				break
			}
			target := unknownFile
			if k+1 < len(toks) {
				name := toks[k+1]
				ends := k+2 == len(toks) || slices.Contains([]string{";", "\n", "}"}, toks[k+2])
				if len(name) > 1 && name[0] == '"' && name[len(name)-1] == '"' && !strings.Contains(name, `\`) && ends {
					target = name[1 : len(name)-1]
				}
			}
			out = append(out, target)
			printing = false
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
