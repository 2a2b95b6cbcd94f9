package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/serverconf"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/toolkit"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1 // the call ended in error, or the command failed
	exitUsage       = 2 // bad command line or input, or credentials the server refuses the command
	exitDenied      = 3 // the call was denied (or needs approval)
	exitInterrupted = 4 // the call was interrupted
	exitNoNATS      = 5 // NATS could not be reached
)

// defaultURL is where `go run ./cmd/worker` listens.
const defaultURL = "nats://" + config.DefaultListen

// A command is one toolctl subcommand. Each lives in a file of its own and
// registers itself from init, so new subcommands need no edit here.
type command struct {
	name    string
	args    string // the synopsis after the name, e.g. "NAME [JSON|@file|-]"
	summary string
	// flags adds the command's own flags to fs (which already holds the
	// connection flags); nil means none.
	flags func(fs *flag.FlagSet)
	// run runs the command with its positional arguments and returns the
	// exit code.
	run func(ctx context.Context, e *env, args []string) int
	// local marks a command that never connects: its help leaves out the
	// connection flags (which it still accepts).
	local bool
	// long marks a command that runs until its own end (a call, with its
	// --timeout; top; the MCP gateway and login): opTimeout does not
	// bound it.
	long bool
	// modes, when set, are the lines of the command list for its
	// subcommands, each a synopsis after the name and a summary.
	modes [][2]string
}

var commands = map[string]*command{}

// opTimeout bounds a command that is not long: one that reads or sets
// the fleet's state with a few requests (after its --wait, if it has
// one). A JetStream request nobody answers (a cluster without a leader,
// a stalled server) is retried until the command's context ends, so
// without a bound it would wait forever.
var opTimeout = 30 * time.Second

// errNoAnswer is the cause of a command's context ended by opTimeout.
var errNoAnswer = errors.New("no answer from NATS in time")

// register adds a command; call it from init.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("toolctl: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// env is what a running command works with: the streams and, on demand,
// the NATS connection (made once from the configuration and flags).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	cfg            *config.Config
	configPath     string            // --config, or ""
	sources        map[string]string // config key → the flag or variable that set it
	nc             *nats.Conn
	client         *bus.Client
	closers        []func() error // run by close, before the connection closes
	// serving is set by the commands that serve until stopped (mcp serve,
	// mcp stdio): their connection reconnects for ever, as a worker's.
	serving bool

	// abort ends the command's context when the server refuses it a
	// publish (nil: the command runs on). refused is the first refusal.
	abort   context.CancelCauseFunc
	mu      sync.Mutex // guards refused and client once connected
	refused error
}

// errRefused is the cause of a command's context ended by a refusal.
var errRefused = errors.New("the NATS server refused a subject to these credentials")

// exitStatus is returned by env methods after they printed the problem:
// the command exits with code.
type exitStatus struct{ code int }

func (e exitStatus) Error() string { return fmt.Sprintf("exit %d", e.code) }

// exitCode returns the exit code carried by err (an exitStatus), else
// exitError.
func exitCode(err error) int {
	var ee exitStatus
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitError
}

// url is the NATS URL to dial: the configured servers, else the embedded
// server's address from a config file, else defaultURL.
func (e *env) url() string {
	if u := e.cfg.NATS.URL(); u != "" {
		return u
	}
	host, port, err := net.SplitHostPort(e.cfg.Embedded.Listen)
	if err != nil {
		return defaultURL
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, port)
}

// conn connects to NATS, or prints why it cannot and returns an exitError.
func (e *env) conn() (*nats.Conn, error) {
	if e.nc != nil {
		return e.nc, nil
	}
	opts, err := e.cfg.NATS.Options()
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return nil, exitStatus{exitUsage}
	}
	url := e.url()
	// The server's refusals (a subject the user's permissions do not
	// allow) arrive apart from the call they spoil: say them.
	report := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if note := olderRoles(err); note != "" {
			fmt.Fprintln(e.stderr, "toolctl: NATS:", err, "("+note+")")
			return
		}
		fmt.Fprintln(e.stderr, "toolctl: NATS:", err)
		if errors.Is(err, nats.ErrPermissionViolation) {
			e.refuse(err)
		}
	})
	opts = append(opts, nats.Name("toolctl"), nats.Timeout(5*time.Second), report)
	if e.serving {
		// A gateway outlives NATS outages as a worker does: nats.go's
		// default gives up after 60 attempts (about two minutes), leaving
		// it running with every call failing.
		opts = append(opts, nats.MaxReconnects(-1))
	}
	nc, err := config.Dial(url, opts...)
	if err != nil {
		hint, code := "", exitNoNATS
		// Several servers' failures each say their own likely cause.
		var each config.ServersError
		if errors.As(err, &each) {
			for _, s := range each {
				s.Note = config.ConnNote(e.cfg.NATS, e.configPath, e.sources, s.URL, e.listenKey(), s.Err)
			}
		}
		note := config.ConnNote(e.cfg.NATS, e.configPath, e.sources, url, e.listenKey(), err)
		switch {
		case errors.Is(err, nats.ErrAuthorization):
			// The server was reached and refused the credentials.
			hint, code = " (the server admits only its users: give your key with --nkey FILE, and --identity ID for a caller; see README: Security)", exitUsage
		case each != nil && allRefused(each):
			hint = e.nothingListens(true)
		case each != nil: // said server by server
		case note != "":
			hint = " (" + note + ")"
		case url == defaultURL:
			hint = " (is a worker running? start one with: go run ./cmd/worker)"
		case errors.Is(err, nats.ErrNoServers):
			hint = e.nothingListens(false)
		}
		// Named without the URLs' passwords or tokens: stderr goes to
		// terminals, CI logs and bug reports.
		fmt.Fprintf(e.stderr, "toolctl: cannot connect to NATS at %s: %v%s\n", urlredact.List(url), err, hint)
		if mixed := e.combined(url); mixed != "" {
			fmt.Fprintln(e.stderr, "toolctl:", mixed)
		}
		return nil, exitStatus{code}
	}
	e.nc = nc
	return nc, nil
}

// nothingListens is the hint for a URL, given or from a --config file,
// where no server takes the connection: where the URL came from, and
// what to do.
func (e *env) nothingListens(several bool) string {
	where, what := "there", "URL"
	if several {
		where, what = "at any of them", "URLs"
	}
	from := config.URLFrom(e.cfg.NATS, e.configPath, e.sources, e.listenKey())
	return " (no NATS server listens " + where + "; the " + what + " came from " + from +
		": start the worker or NATS server first, or give the address it listens on, the nats= of a worker's ready line, with --nats or NATS_URL)"
}

// allRefused reports whether no server of the list took the connection.
func allRefused(each config.ServersError) bool {
	for _, s := range each {
		if !errors.Is(s.Err, nats.ErrNoServers) {
			return false
		}
	}
	return true
}

// combined is config.Combined's text for a connection to url that
// failed: which settings came from the --config file, and which from
// flags, variables or defaults.
func (e *env) combined(url string) string {
	return config.Combined(e.cfg.NATS, e.configPath, e.sources, url, e.listenKey())
}

// listenKey is the key of the --config file the URL dialled came from
// when no URL was given (a worker's embedded.listen, or the listen of its
// embedded.server_config), or "" when the URL is the default or given.
func (e *env) listenKey() string {
	switch {
	case e.cfg.Has("embedded.listen"):
		return "embedded.listen"
	case e.cfg.Embedded.ServerConfig != "" && e.cfg.Embedded.Listen != config.DefaultListen:
		return "embedded.server_config"
	}
	return ""
}

// bus returns a Client on the connection.
func (e *env) bus() (*bus.Client, error) {
	if e.client != nil {
		return e.client, nil
	}
	nc, err := e.conn()
	if err != nil {
		return nil, err
	}
	c, err := e.newClient(nc, bus.ClientOptions{Logger: slog.New(slog.NewTextHandler(e.stderr, nil))})
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return nil, exitStatus{exitError}
	}
	e.mu.Lock()
	e.client = c
	e.mu.Unlock()
	return c, nil
}

// olderRoles says why err, the server refusing what a role set written
// before it does not allow, does not end the command; "" for any other
// error. The record of a durable call's cancel (wire.SubjectCancelledPrefix):
// the cancel itself is allowed. The lookup of a durable tool's consumer
// of the calls stream: the call is queued without it.
func olderRoles(err error) string {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return ""
	}
	switch {
	case strings.Contains(err.Error(), `for Publish to "`+wire.SubjectCancelledPrefix):
		return "the server's roles predate the cancels stream: the cancel went, its record did not; toolctl auth init writes the current roles"
	case strings.Contains(err.Error(), `for Publish to "$JS.API.CONSUMER.INFO.`+wire.StreamCalls+"."):
		return "the server's roles predate the lookup of durable tools: the call is queued without it, and a durable call of a tool no worker serves waits for its deadline; toolctl auth init writes the current roles"
	}
	return ""
}

// refuse records a permission violation the server reported. A refused
// publish (a call, cancel or request the credentials may not send) ends
// the command at once: nothing answers what the server dropped, and a
// call would wait for the worker in vain. Other refused subscriptions
// are only recorded here; a client's own inbox refused ends the command
// when the client is made (newClient).
func (e *env) refuse(err error) {
	e.mu.Lock()
	if e.refused == nil {
		e.refused = err
	}
	c := e.client
	e.mu.Unlock()
	if e.abort == nil || !strings.Contains(err.Error(), "for Publish to") {
		return
	}
	e.abort(errRefused)
	if c != nil {
		c.Close() // ends its calls now, not after their cancel's grace
	}
}

// publishRefused reports, after a flush, whether the server refused a
// publish: it says so before the flush's PONG, but the error handler
// that records it may run after the command has ended.
func (e *env) publishRefused() bool {
	return e.lastRefused(e.nc, "for Publish to")
}

// lastRefused reports whether the connection's last error is a
// permission violation whose text holds what, and records it.
func (e *env) lastRefused(nc *nats.Conn, what string) bool {
	err := nc.LastError()
	if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), what) || olderRoles(err) != "" {
		return false
	}
	e.mu.Lock()
	if e.refused == nil {
		e.refused = err
	}
	e.mu.Unlock()
	return true
}

// refusal returns the first permission violation the server reported,
// or nil.
func (e *env) refusal() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused
}

// operatorCommands are the commands a caller's key may not run (README:
// Roles): they read or write every caller's state.
const operatorCommands = "pending, approve, deny, allow, setting a mode, sessions, top and mcp-headers"

// refusedHint says what to do about a refusal of command name (with its
// arguments): which credentials may do what (README: Security).
func (e *env) refusedHint(name string, args []string) {
	const refused = "toolctl: the NATS server refused this to your credentials: "
	id, caller := strings.CutPrefix(filepath.Base(e.cfg.NATS.NKeySeed), "caller-")
	id, isKey := strings.CutSuffix(id, ".nk")
	caller = caller && isKey
	switch {
	case name == "mcp" && len(args) > 0 && (args[0] == "serve" || args[0] == "stdio"):
		fmt.Fprintf(e.stderr, refused+"mcp %s is the MCP gateway, which runs with the gateway's key (--nkey gateway.nk, written by toolctl auth init; see README: Security)\n", args[0])
	case caller && e.cfg.NATS.Identity == id:
		fmt.Fprintf(e.stderr, refused+"caller-%s.nk calls tools as %s; "+operatorCommands+" need the operator's key (see README: Security)\n", id, id)
	default:
		if !caller {
			id = "ID"
		}
		fmt.Fprintf(e.stderr, refused+"a caller's key calls only as its own identity (--identity %s for caller-%s.nk); "+operatorCommands+" need the operator's key (see README: Security)\n", id, id)
	}
}

// newClient is every client toolctl makes: as the caller identity
// (--identity), so its sessions, results and cancels are that identity's.
func (e *env) newClient(nc *nats.Conn, o bus.ClientOptions) (*bus.Client, error) {
	o.Identity = e.cfg.NATS.Identity
	c, err := bus.NewClient(nc, &o)
	if err != nil {
		return nil, err
	}
	// A client whose inbox the server refuses hears no answer: a call
	// would wait for worker_lost, and a listing would depend on whether
	// an announcement came in time. The server says so before the
	// flush's PONG.
	if nc.Flush() == nil && e.lastRefused(nc, `Subscription to "`+wire.InboxPrefix) {
		c.Close()
		return nil, errInboxRefused
	}
	return c, nil
}

// errInboxRefused ends a command whose client may not subscribe its inbox.
var errInboxRefused = errors.New("the NATS server refused this client's reply inbox to these credentials, so no answer can reach it")

func (e *env) close() {
	for _, c := range e.closers {
		c()
	}
	if e.client != nil {
		e.client.Close()
	}
	if e.nc != nil {
		e.nc.Close()
	}
}

// printJSON prints v as indented JSON and returns the exit code. The
// texts in v may be a caller's or the fleet's: every character that is
// not printable is \u-escaped (encoding/json escapes only C0 controls,
// not C1 controls or bidi overrides), which is the same JSON.
func (e *env) printJSON(v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	lines := strings.Split(string(b), "\n") // the indentation's newlines stay
	for i, l := range lines {
		lines[i] = printableJSON(l)
	}
	fmt.Fprintln(e.stdout, strings.Join(lines, "\n"))
	return exitOK
}

// nearCommand is ": did you mean NAME?" for the command whose name is
// nearest to name, when near enough to be a typo of it; else "".
func nearCommand(name string) string {
	near, best := "", 0
	for n := range commands {
		d := editDistance(strings.ToLower(name), n)
		if d <= max(1, len(name)/3) && (near == "" || d < best || d == best && n < near) {
			near, best = n, d
		}
	}
	if near == "" {
		return ""
	}
	return ": did you mean " + near + "?"
}

// usagef prints a usage problem and returns exitUsage.
func (e *env) usagef(format string, args ...any) int {
	fmt.Fprintf(e.stderr, "toolctl: "+format+"\n", args...)
	return exitUsage
}

// badCallID refuses a call id before anything is sent.
func (e *env) badCallID(id string) int {
	return e.usagef("invalid call id %s: call ids are 1-%d letters, digits, '_' and '-'", wire.Quote(id), wire.MaxCallIDLen)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "Usage: toolctl [connection flags] COMMAND [arguments] [flags]\n\n"+
		"Talks to a toolbus fleet on NATS (default "+defaultURL+", where `go run ./cmd/worker` listens).\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range names {
		c := commands[n]
		if c.modes == nil {
			fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		}
		for _, m := range c.modes {
			fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, m[0], m[1])
		}
	}
	tw.Flush()
	fmt.Fprint(w, "\nConnection flags (before or after the command; each has an environment variable):\n")
	out := fs.Output()
	fs.SetOutput(w) // the flags go where the rest of the usage goes
	fs.PrintDefaults()
	fs.SetOutput(out)
	fmt.Fprint(w, "\nExit codes: 0 success, 1 error, 2 bad usage or input (or credentials refused), 3 denied, 4 interrupted, 5 NATS unreachable.\n")
}

// emptyFlag reports whether the flag name was given on the command line
// with an empty value.
func emptyFlag(fs *flag.FlagSet, name string) bool {
	empty := false
	fs.Visit(func(f *flag.Flag) { empty = empty || f.Name == name && f.Value.String() == "" })
	return empty
}

// hasFlags reports whether fs defines any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// globalFlags are the flags every command takes: --config and the
// connection flags.
func globalFlags(name string, stderr io.Writer) (*flag.FlagSet, *string, *config.ConnFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "worker config `file` to take the NATS connection from")
	var c config.ConnFlags
	c.Register(fs)
	return fs, configPath, &c
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"} // as worker --version
	}
	gfs, configPath, gconn := globalFlags("toolctl", stderr)
	gfs.Usage = func() { usage(stderr, gfs) }
	if err := config.ParseFlags(gfs, args, "toolctl -h"); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if gfs.NArg() == 0 {
		usage(stderr, gfs)
		return exitUsage
	}
	name := gfs.Arg(0)
	if name == "help" {
		switch topic := gfs.Arg(1); {
		case topic == "":
			usage(stdout, gfs)
			return exitOK
		case gfs.NArg() > 2:
			fmt.Fprintln(stderr, "toolctl: help takes one command name (toolctl help COMMAND)")
			return exitUsage
		case commands[topic] == nil:
			fmt.Fprintf(stderr, "toolctl: unknown command %q%s (see toolctl -h)\n", topic, nearCommand(topic))
			return exitUsage
		default:
			// As toolctl COMMAND -h, but asked for: on stdout, as toolctl help.
			return run(ctx, []string{topic, "-h"}, stdin, stdout, stdout)
		}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "toolctl: unknown command %q%s (see toolctl -h)\n", name, nearCommand(name))
		return exitUsage
	}

	cfs, cconfigPath, _ := globalFlags("toolctl "+name, stderr)
	if cmd.flags != nil {
		cmd.flags(cfs)
	}
	cfs.Usage = func() {
		if !cmd.local {
			fmt.Fprintf(stderr, "Usage: toolctl %s [flags]\n\n%s\n\nFlags:\n", strings.TrimSpace(name+" "+cmd.args), cmd.summary)
			cfs.PrintDefaults()
			return
		}
		own := flag.NewFlagSet(name, flag.ContinueOnError)
		if cmd.flags != nil {
			cmd.flags(own)
		}
		own.SetOutput(stderr)
		if !hasFlags(own) {
			fmt.Fprintf(stderr, "Usage: toolctl %s\n\n%s\n", strings.TrimSpace(name+" "+cmd.args), cmd.summary)
			return
		}
		fmt.Fprintf(stderr, "Usage: toolctl %s [flags]\n\n%s\n\nFlags:\n", strings.TrimSpace(name+" "+cmd.args), cmd.summary)
		own.PrintDefaults()
	}
	pos, err := parseInterspersed(cfs, gfs.Args()[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}

	out := &outWriter{w: stdout}
	e := &env{stdin: stdin, stdout: out, stderr: stderr}
	defer e.close()
	// A publish the server refuses ends any command, the MCP gateway's
	// too: with the gateway's key nothing it sends is refused.
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	e.abort = abort
	path := *configPath
	if *cconfigPath != "" {
		path = *cconfigPath
	}
	// --config "$FILE" with FILE unset would connect as if no file were
	// given: the default server, none of the file's credentials.
	for _, fs := range []*flag.FlagSet{gfs, cfs} {
		if emptyFlag(fs, "config") {
			return e.usagef("--config needs a file: a worker's configuration, to connect the way that worker does")
		}
	}
	e.configPath = path
	if e.cfg, e.sources, err = loadConfig(path, gfs, gconn, cfs); err != nil {
		fmt.Fprintf(stderr, "toolctl: invalid connection settings:\n%v\n", err)
		return exitUsage
	}
	if code, bad := e.checkSession(cfs); bad {
		return code
	}
	bound := opTimeout
	if !cmd.local && !cmd.long {
		// A command's --wait (how long to collect the workers' answers)
		// is time asked for, not NATS's silence: the bound comes on top.
		if f := cfs.Lookup("wait"); f != nil {
			if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
				bound += d
			}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, bound, errNoAnswer)
		defer cancel()
	}
	code := cmd.run(ctx, e, pos)
	if err := out.failed(); err != nil {
		fmt.Fprintf(stderr, "toolctl: writing the output: %v (the output is incomplete)\n", err)
		if code == exitOK {
			code = exitError
		}
	}
	if context.Cause(ctx) == errNoAnswer {
		fmt.Fprintf(stderr, "toolctl: NATS did not answer within %s: its JetStream may have no leader for the moment (a cluster electing, nodes down) or the server is stalled; try again\n", bound)
		if code == exitOK {
			code = exitError
		}
	}
	if e.refusal() != nil {
		e.refusedHint(name, pos)
		if code != exitOK {
			code = exitUsage
		}
	}
	return code
}

// outWriter is stdout as the commands write it: it keeps the first write
// error, which their prints drop, so that output lost (a full disk, an I/O
// write error) fails the command instead of exiting 0.
type outWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

func (o *outWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.mu.Lock()
		if o.err == nil {
			o.err = err
		}
		o.mu.Unlock()
	}
	return n, err
}

// failed returns the first write error, or nil.
func (o *outWriter) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// checkSession refuses a --session that no session can be: one too long
// for its KV key (wire.SessionKey, under the --caller or --identity it
// belongs to). Sent, it failed on the workers as a store failure (a call
// ended unavailable) or not at all (a call whose tools need no groups).
func (e *env) checkSession(fs *flag.FlagSet) (int, bool) {
	f := fs.Lookup("session")
	if f == nil || f.Value.String() == "" {
		return exitOK, false
	}
	identity := e.cfg.NATS.Identity
	if c := fs.Lookup("caller"); c != nil && c.Value.String() != "" {
		identity = c.Value.String()
	}
	if _, err := wire.SessionKey(toolkit.SessionScope(identity, f.Value.String())); err != nil {
		return e.usagef("--session: %v; give a shorter session name", err), true
	}
	return exitOK, false
}

// loadConfig builds the connection settings: the config file's, then the
// environment, then the flags, as the worker's. The flags before and
// after the command are one command line: one after it beats the same
// one before it, and beside the environment both count alike (an
// authentication of each is refused, as two of the flags are).
func loadConfig(path string, gfs *flag.FlagSet, gconn *config.ConnFlags, cfs *flag.FlagSet) (*config.Config, map[string]string, error) {
	cfg := config.Default()
	if path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			return nil, nil, err
		}
	}
	var err error
	cfs.Visit(func(f *flag.Flag) {
		if f.Name != "config" && gfs.Lookup(f.Name) != nil && err == nil {
			err = gfs.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return nil, nil, err
	}
	sources := gconn.Apply(gfs, &cfg.NATS, true)
	if err := cfg.Validate(); err != nil {
		return nil, nil, config.Attribute(err, sources)
	}
	// The worker's server listens where its server configuration says
	// unless the config file says where (cmd/worker): dial it there. A
	// configuration that does not parse keeps that worker from starting;
	// the dial then says there is no server.
	if file := cfg.Embedded.ServerConfig; file != "" && !cfg.Has("embedded.listen") {
		if listen, err := serverconf.Listen(file); err == nil && listen != "" {
			cfg.Embedded.Listen = listen
		}
	}
	return cfg, sources, nil
}

// parseInterspersed parses flags that may come before, between and after
// the positional arguments, and returns the positional ones. Everything
// after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := config.ParseFlags(fs, args, fs.Name()+" -h"); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, rest...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// exitFor maps a final response to the exit code.
func exitFor(r *toolkit.Response) int {
	switch r.State {
	case toolkit.StateSuccess:
		return exitOK
	case toolkit.StateDenied:
		return exitDenied
	case toolkit.StateInterrupted:
		return exitInterrupted
	default:
		return exitError
	}
}
