package bus

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// The worker in the NATS services protocol (what `nats micro ls`, `nats
// micro info toolbus` and `nats micro stats toolbus` read): every worker
// is an instance of the service wire.ServiceName, its id the worker's
// instance, one endpoint per tool it serves (subject tools.call.<tool>,
// the worker's queue group). STATS counts the finals sent for each tool:
// requests, errors (finals in state error), the total time of the calls
// that ran and its average over them (a call refused without running,
// overloaded or a bad request, is a request but not a run: the runs are
// in the endpoint's data, {"runs": n}), and the last error's code and
// text. The worker answers on its own
// subscriptions to $SRV.<verb>[.toolbus[.<instance>]]; the calls keep
// their own subscriptions, so the protocol costs a call two atomic adds.

// toolState is what the worker keeps per served tool.
type toolState struct {
	pace pace
	ep   endpointStats
}

// endpointStats are a tool's numbers for STATS.
type endpointStats struct {
	requests atomic.Int64
	runs     atomic.Int64 // requests that ran (timed)
	errors   atomic.Int64
	nanos    atomic.Int64
	mu       sync.Mutex
	lastErr  string
}

// maxLastError bounds the last error STATS reports.
const maxLastError = 200

func (e *endpointStats) record(resp *toolkit.Response, took time.Duration) {
	e.requests.Add(1)
	if took > 0 {
		e.runs.Add(1)
		e.nanos.Add(int64(took))
	}
	if resp.State != toolkit.StateError {
		return
	}
	e.errors.Add(1)
	msg := string(resp.Code)
	if text := resp.Text(); text != "" {
		msg += ": " + cutUTF8(text, maxLastError)
	}
	e.mu.Lock()
	e.lastErr = msg
	e.mu.Unlock()
}

// setTools keeps a state for each served tool (the one it had, if any).
func (w *Worker) setTools(names []string) {
	old := w.tools.Load()
	m := make(map[string]*toolState, len(names))
	for _, n := range names {
		if old != nil && (*old)[n] != nil {
			m[n] = (*old)[n]
		} else {
			m[n] = new(toolState)
		}
	}
	w.tools.Store(&m)
}

// toolState is the state of a served tool; nil for another.
func (w *Worker) toolState(name string) *toolState {
	if m := w.tools.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}

// serviceSubjects are the $SRV subjects a worker answers.
func (w *Worker) serviceSubjects() []string {
	p := wire.SubjectServicePrefix + "*"
	return []string{p, p + "." + wire.ServiceName, p + "." + wire.ServiceName + "." + w.opts.Instance}
}

// onService answers a PING, INFO or STATS request.
func (w *Worker) onService(m *nats.Msg) {
	if m.Reply == "" || !strings.HasPrefix(m.Reply, wire.InboxPrefix) {
		return
	}
	verb, _, _ := strings.Cut(strings.TrimPrefix(m.Subject, wire.SubjectServicePrefix), ".")
	id := micro.ServiceIdentity{Name: wire.ServiceName, ID: w.opts.Instance, Version: w.serviceVersion(),
		Metadata: map[string]string{"queue": w.opts.Queue}}
	var v any
	switch verb {
	case "PING":
		v = micro.Ping{ServiceIdentity: id, Type: micro.PingResponseType}
	case "INFO":
		info := micro.Info{ServiceIdentity: id, Type: micro.InfoResponseType,
			Description: "toolbus worker: runs tool calls published on tools.call.<tool>", Endpoints: []micro.EndpointInfo{}}
		for _, name := range w.servedNames() {
			info.Endpoints = append(info.Endpoints, micro.EndpointInfo{Name: name, Subject: wire.CallSubject(name, ""), QueueGroup: w.opts.Queue})
		}
		v = info
	case "STATS":
		st := micro.Stats{ServiceIdentity: id, Type: micro.StatsResponseType, Started: w.started, Endpoints: []*micro.EndpointStats{}}
		for _, name := range w.servedNames() {
			e := &micro.EndpointStats{Name: name, Subject: wire.CallSubject(name, ""), QueueGroup: w.opts.Queue}
			if ts := w.toolState(name); ts != nil {
				e.NumRequests = int(ts.ep.requests.Load())
				e.NumErrors = int(ts.ep.errors.Load())
				e.ProcessingTime = time.Duration(ts.ep.nanos.Load())
				runs := ts.ep.runs.Load()
				if runs > 0 {
					e.AverageProcessingTime = e.ProcessingTime / time.Duration(runs)
				}
				e.Data = strconv.AppendInt([]byte(`{"runs":`), runs, 10)
				e.Data = append(e.Data, '}')
				ts.ep.mu.Lock()
				e.LastError = ts.ep.lastErr
				ts.ep.mu.Unlock()
			}
			st.Endpoints = append(st.Endpoints, e)
		}
		v = st
	default:
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		w.log.Error("bus: encoding a services protocol answer", "verb", verb, "err", err)
		return
	}
	if err := m.Respond(data); err != nil {
		w.log.Warn("bus: answering a services protocol request", "verb", verb, "err", err)
	}
}

// servedNames are the tools the worker serves now, sorted (the keys of
// its tool states, which follow the toolkit).
func (w *Worker) servedNames() []string {
	m := w.tools.Load()
	if m == nil {
		return nil
	}
	names := make([]string, 0, len(*m))
	for name := range *m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// serviceVersion is the worker's version as the protocol wants it
// (semantic versioning): WorkerOptions.Version without a leading v, or
// 0.0.0 when it is no version (a development build).
func (w *Worker) serviceVersion() string {
	v := strings.TrimPrefix(w.opts.Version, "v")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return "0.0.0"
	}
	return v
}
