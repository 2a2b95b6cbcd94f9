package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
)

// toolctl top: the fleet's calls per tool, from the workers' answers to
// the NATS services protocol ($SRV.STATS.toolbus, see subjects.md): every
// interval it asks every worker, and prints per tool the workers serving
// it, calls and errors per second over the interval, their average
// duration, the calls since the workers started and the last error.
// --once prints one table (after one interval) and exits. On a terminal
// each table redraws the screen; to a file or pipe they follow one
// another, a blank line apart. The connection
// needs to publish $SRV.STATS.toolbus (an operator's; the caller role may
// not).

func init() {
	var o topOptions
	register(&command{
		name:    "top",
		long:    true,
		summary: "the fleet's calls per tool, refreshed: workers, calls/s, errors/s, average duration, last error (`--once` for one table)",
		flags:   o.register,
		run:     o.run,
	})
}

type topOptions struct {
	once     bool
	interval time.Duration
}

func (o *topOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.once, "once", false, "print one table, after one interval, and exit")
	config.DurationVar(fs, &o.interval, "interval", 2*time.Second, "the `interval` the rates are measured over")
}

// gatherWindow is how long top waits for workers' answers after the
// last one came.
const gatherWindow = 300 * time.Millisecond

// serviceStats asks every worker for its stats.
func serviceStats(ctx context.Context, nc *nats.Conn) (map[string]micro.Stats, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(wire.SubjectServicePrefix+"STATS."+wire.ServiceName, inbox, nil); err != nil {
		return nil, err
	}
	out := map[string]micro.Stats{}
	wait := 2 * time.Second     // the first answer may take a while on a busy fleet
	read := 0                   // bytes of answers read this round
	for range maxStatsAnswers { // answers keep coming only from a flood

		m, err := sub.NextMsgWithContext(withTimeout(ctx, wait))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return out, nil // nothing more within the window
		}
		if read += len(m.Data); read > maxStatsBytes {
			return out, nil
		}
		var st micro.Stats
		if json.Unmarshal(m.Data, &st) == nil && st.ID != "" && st.Name == wire.ServiceName {
			// Anyone may answer: what is not an endpoint's stats is dropped.
			st.Endpoints = slices.DeleteFunc(st.Endpoints, func(e *micro.EndpointStats) bool {
				return e == nil || e.NumRequests < 0 || e.NumErrors < 0 || e.ProcessingTime < 0
			})
			out[st.ID] = st
		}
		wait = gatherWindow
	}
	return out, nil
}

// maxStatsAnswers and maxStatsBytes bound the answers one round reads
// (a worker's answer is a few hundred bytes per tool).
const (
	maxStatsAnswers = 10_000
	maxStatsBytes   = 64 << 20
)

// withTimeout is ctx bounded by d; the cancel is left to the timer (a
// short wait per answer).
func withTimeout(ctx context.Context, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	context.AfterFunc(c, cancel)
	return c
}

// runs is how many of an endpoint's requests ran (its data's "runs"; the
// requests for a worker that does not say).
func runs(e *micro.EndpointStats) int {
	var d struct {
		Runs *int `json:"runs"`
	}
	if json.Unmarshal(e.Data, &d) == nil && d.Runs != nil && *d.Runs >= 0 {
		return *d.Runs
	}
	return e.NumRequests
}

// toolRow is one line of the table.
type toolRow struct {
	tool          string
	workers       int
	calls, errors float64 // per second
	avg           time.Duration
	total         int
	lastErr       string
}

// rows compares two rounds of stats, the first taken at since, dt
// before the second. A worker's counts are compared with its previous
// ones when it answered both rounds and did not restart in between
// (same start time); a count that went down (its tool was removed and
// added again) counts from zero; a worker without previous counts adds
// its counts only when it started after the first round (otherwise they
// are older than the interval).
func rows(before, after map[string]micro.Stats, since time.Time, dt time.Duration) []toolRow {
	byTool := map[string]*toolRow{}
	busy := map[string]time.Duration{}
	timed := map[string]int{} // calls that ran, whose time busy sums
	for id, st := range after {
		b, known := before[id]
		comparable := known && b.Started.Equal(st.Started)
		fresh := !comparable && st.Started.After(since)
		prev := map[string]*micro.EndpointStats{}
		if comparable {
			for _, e := range b.Endpoints {
				prev[e.Name] = e
			}
		}
		for _, e := range st.Endpoints {
			r := byTool[e.Name]
			if r == nil {
				r = &toolRow{tool: e.Name}
				byTool[e.Name] = r
			}
			r.workers++
			r.total += e.NumRequests
			var n, errs, ran int
			var took time.Duration
			switch p := prev[e.Name]; {
			case p != nil && e.NumRequests >= p.NumRequests:
				n, errs, ran, took = e.NumRequests-p.NumRequests, e.NumErrors-p.NumErrors, runs(e)-runs(p), e.ProcessingTime-p.ProcessingTime
			case comparable || fresh: // counting from zero within the interval
				n, errs, ran, took = e.NumRequests, e.NumErrors, runs(e), e.ProcessingTime
			}
			r.calls += float64(n) / dt.Seconds()
			r.errors += float64(errs) / dt.Seconds()
			timed[e.Name] += ran
			busy[e.Name] += took
			if e.LastError != "" && (errs > 0 || r.lastErr == "") {
				r.lastErr = e.LastError
			}
		}
	}
	out := make([]toolRow, 0, len(byTool))
	for name, r := range byTool {
		if timed[name] > 0 {
			r.avg = busy[name] / time.Duration(timed[name])
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b toolRow) int {
		if a.calls != b.calls {
			if a.calls > b.calls {
				return -1
			}
			return 1
		}
		return strings.Compare(a.tool, b.tool)
	})
	return out
}

func printTop(w io.Writer, workers int, dt time.Duration, rs []toolRow) {
	noun := "workers"
	if workers == 1 {
		noun = "worker"
	}
	fmt.Fprintf(w, "%d %s, rates over %s\n", workers, noun, dt.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tWORKERS\tCALLS/S\tERRORS/S\tAVG\tTOTAL\tLAST ERROR")
	for _, r := range rs {
		avg := "-"
		if r.avg > 0 {
			avg = r.avg.Round(time.Microsecond).String()
		}
		last := oneLine(r.lastErr, 60)
		// Anyone may answer $SRV.STATS: a name is Go-quoted when not printable.
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%s\t%d\t%s\n", plain(r.tool), r.workers, r.calls, r.errors, avg, r.total, last)
	}
	tw.Flush()
}

func (o *topOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("top takes no arguments")
	}
	if o.interval < 100*time.Millisecond {
		return e.usagef("--interval must be at least 100ms, got %v", o.interval)
	}
	nc, err := e.conn()
	if err != nil {
		return exitCode(err)
	}
	at := time.Now() // when the round was asked for: the workers answer right after
	before, err := serviceStats(ctx, nc)
	if errors.Is(context.Cause(ctx), errRefused) {
		return exitUsage // the server refused the request: run says why
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	if len(before) == 0 {
		fmt.Fprintln(e.stderr, "toolctl: no worker answered $SRV.STATS.toolbus (no workers, or this connection may not ask)")
		return exitError
	}
	// A terminal gets a fresh screen per table; a file or pipe gets the
	// tables one after the other, a blank line apart.
	redraw := !o.once && terminal(e.stdout)
	for first := true; ; first = false {
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(time.Until(at.Add(o.interval))):
		}
		now := time.Now()
		after, err := serviceStats(ctx, nc)
		if errors.Is(context.Cause(ctx), errRefused) {
			return exitUsage
		}
		if errors.Is(err, context.Canceled) {
			return exitOK
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		switch {
		case redraw:
			fmt.Fprint(e.stdout, "\033[H\033[2J")
		case !first:
			fmt.Fprintln(e.stdout)
		}
		printTop(e.stdout, len(after), now.Sub(at), rows(before, after, at, now.Sub(at)))
		if o.once {
			return exitOK
		}
		before, at = after, now
	}
}

// oneLine is s for one cell of the table: unprintable characters (line
// breaks of a traceback, terminal escapes) as spaces, cut to at most n
// runes.
func oneLine(s string, n int) string {
	r := []rune(unprintableAsSpaces(s))
	if len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return string(r)
}
