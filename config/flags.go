package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// connSpec lists the connection settings: flag, environment variable and
// the config key they override.
var connSpec = []connSetting{
	{"creds", "NATS_CREDS", "nats.credentials", "NATS credentials `file` (user JWT and nkey seed)", func(n *NATS) *string { return &n.Credentials }},
	{"nkey", "NATS_NKEY", "nats.nkey_seed", "`file` holding a NATS nkey seed", func(n *NATS) *string { return &n.NKeySeed }},
	{"user", "NATS_USER", "nats.user", "NATS `user` (with --password)", func(n *NATS) *string { return &n.User }},
	{"password", "NATS_PASSWORD", "nats.password", "NATS `password` (prefer the environment variable: flags show in ps)", func(n *NATS) *string { return &n.Password }},
	{"token", "NATS_TOKEN", "nats.token", "NATS auth `token` (prefer the environment variable)", func(n *NATS) *string { return &n.Token }},
	{"tls-ca", "NATS_CA", "nats.tls.ca", "CA `file` (PEM) to verify the NATS server with", func(n *NATS) *string { return &n.TLS.CA }},
	{"tls-cert", "NATS_CERT", "nats.tls.cert", "client certificate `file` (PEM), with --tls-key", func(n *NATS) *string { return &n.TLS.Cert }},
	{"tls-key", "NATS_KEY", "nats.tls.key", "client key `file` (PEM), with --tls-cert", func(n *NATS) *string { return &n.TLS.Key }},
	{"identity", "TOOLBUS_IDENTITY", "nats.identity", "caller `identity` to call as: its own replies, cancels and sessions (the caller role's name)", func(n *NATS) *string { return &n.Identity }},
}

type connSetting struct {
	flag, env, path, usage string
	field                  func(*NATS) *string
}

// authPaths are the config keys that choose how to authenticate: giving
// any of them by flag or environment replaces the config file's choice.
var authPaths = []string{"nats.credentials", "nats.nkey_seed", "nats.user", "nats.password", "nats.token"}

// ConnFlags are the NATS connection flags shared by the worker and
// toolctl: --nats plus the auth and TLS flags, each with an environment
// variable (NATS_URL, NATS_CREDS, NATS_NKEY, NATS_USER, NATS_PASSWORD,
// NATS_TOKEN, NATS_CA, NATS_CERT, NATS_KEY, TOOLBUS_IDENTITY). A flag beats its variable,
// which beats the config file.
type ConnFlags struct {
	// NoIdentity leaves out --identity and TOOLBUS_IDENTITY, for a
	// program that calls no tools (the worker): an identity is whom a
	// client calls as. Set it before Register.
	NoIdentity bool

	url    string
	values map[string]*string // flag name → value
}

// Register adds --nats and the auth and TLS flags to fs.
func (c *ConnFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "nats", "", "NATS server `URL`s, comma-separated (env NATS_URL)")
	c.values = map[string]*string{}
	for _, s := range c.spec() {
		c.values[s.flag] = fs.String(s.flag, "", s.usage+" (env "+s.env+")")
	}
}

// spec is connSpec without what NoIdentity leaves out.
func (c *ConnFlags) spec() []connSetting {
	if !c.NoIdentity {
		return connSpec
	}
	return slices.DeleteFunc(slices.Clone(connSpec), func(s connSetting) bool { return s.path == "nats.identity" })
}

// Apply overrides n with what was given by flag (fs) or else, withEnv, by
// environment variable, and returns, for each config key it set, where the
// value came from ("flag --nats", "env NATS_URL"), so validation errors can
// name the source instead of a line of the config file.
func (c *ConnFlags) Apply(fs *flag.FlagSet, n *NATS, withEnv bool) map[string]string {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	sources := map[string]string{}
	pick := func(flagName, env string, v string) (string, string, bool) {
		if given[flagName] {
			return v, "flag --" + flagName, true
		}
		if e, ok := os.LookupEnv(env); withEnv && ok && e != "" {
			return e, "env " + env, true
		}
		return "", "", false
	}
	if v, src, ok := pick("nats", "NATS_URL", c.url); ok {
		n.URLs = splitURLs(v)
		sources["nats.urls"] = src
	}
	type setting struct{ value, src string }
	set := map[string]setting{}
	spec := c.spec()
	for _, s := range spec {
		if v, src, ok := pick(s.flag, s.env, *c.values[s.flag]); ok {
			set[s.path] = setting{v, src}
		}
	}
	for _, p := range authPaths {
		if _, ok := set[p]; ok { // the command line chooses the authentication
			n.Credentials, n.NKeySeed, n.User, n.Password, n.Token = "", "", "", "", ""
			break
		}
	}
	for _, s := range spec {
		if v, ok := set[s.path]; ok {
			*s.field(n) = v.value
			sources[s.path] = v.src
		}
	}
	return sources
}

// splitURLs splits a comma-separated list of server URLs.
func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	if out == nil {
		out = []string{""} // an empty --nats is an invalid URL, not "none"
	}
	return out
}

// Attribute rewrites validation errors about keys that were set by flag or
// environment so that they name that source rather than the config file.
func Attribute(err error, sources map[string]string) error {
	var es Errors
	if !errors.As(err, &es) {
		return err
	}
	for _, e := range es {
		for path, src := range sources {
			if e.Path == path || strings.HasPrefix(e.Path, path+".") || strings.HasPrefix(e.Path, path+"[") {
				e.File, e.Line = src, 0
				break
			}
		}
	}
	return es
}

// DurationVar defines a duration flag like fs.DurationVar, whose bad
// values (a number without a unit, say) are refused with what a duration
// looks like, as in the config file, rather than the flag package's
// "parse error". The usage should name the value `duration` (in back
// quotes) for the help to show it.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationFlag)(p), name, usage)
}

// durationFlag is a flag.Value of a time.Duration.
type durationFlag time.Duration

func (d *durationFlag) String() string {
	if d == nil {
		return time.Duration(0).String()
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil && tooLarge("time.Duration", s) {
		return errors.New("want " + friendlyType["time.Duration"] + ", not one this large")
	}
	if err != nil {
		return errors.New("want " + friendlyType["time.Duration"])
	}
	*d = durationFlag(v)
	return nil
}

// IntVar defines an int flag like fs.IntVar, whose bad values (a word, a
// fraction, a number too large) are refused with what the flag wants
// rather than the flag package's "parse error" or "value out of range".
func IntVar(fs *flag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var((*intFlag)(p), name, usage)
}

// intFlag is a flag.Value of an int.
type intFlag int

func (i *intFlag) String() string {
	if i == nil {
		return "0"
	}
	return strconv.Itoa(int(*i))
}

func (i *intFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if errors.Is(err, strconv.ErrRange) {
		return errors.New("want " + friendlyType["int"] + ", not one this large")
	}
	if err != nil {
		return errors.New("want " + friendlyType["int"])
	}
	*i = intFlag(v)
	return nil
}

// ParseFlags parses args with fs. On a flag it cannot take it prints the
// error, after fs's name, and where the flags are listed (help, e.g. "worker -h") instead
// of every flag, naming the flag meant when the unknown one is a near
// miss of one fs has; -h and -help print fs.Usage as before.
func ParseFlags(fs *flag.FlagSet, args []string, help string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
	case err != nil:
		fmt.Fprintf(out, "%s: %s%s\nsee %s for the flags\n", fs.Name(), err, nearFlag(fs, err), help)
	}
	return err
}

// nearFlag is " (did you mean --NAME?)" when err is of an unknown flag
// within two edits of fs's flag NAME, else "".
func nearFlag(fs *flag.FlagSet, err error) string {
	bad, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	bad = strings.TrimLeft(bad, "-")
	best, dist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(bad, f.Name); d < dist {
			best, dist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return " (did you mean --" + best + "?)"
}

// editDistance is the Levenshtein distance of a and b, by bytes; past 2
// it is only known to be more.
func editDistance(a, b string) int {
	if d := len(a) - len(b); d > 2 || d < -2 {
		return 3
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
