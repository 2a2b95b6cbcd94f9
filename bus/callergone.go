package bus

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// A caller gone (its process or connection ended without cancelling)
// leaves its core calls running: nothing it publishes says so. A tool
// that streams for ever would hold its slot for ever; a fleet's slots
// could all go to calls nobody reads. So a running core call probes its
// caller's inbox: every probe interval (its heartbeat interval, at least
// a second) one of its heartbeats carries a reply subject of the worker's
// (tools.answer.<instance>.<token>-<n>, the token random per call). A
// caller's client ignores the reply subject of a frame; the NATS server
// answers it "no responders" (Status 503) when nothing subscribes to the
// caller's inbox any more. A call whose probes all found the inbox gone
// for CallerGoneAfter (at least three probe intervals) is cancelled with
// toolkit.ErrCallerGone: it ends interrupted, its final going nowhere. A
// caller reconnecting within that time (a server restarting, a cluster
// node failing over) keeps its calls: one probe that reaches the inbox
// starts the count again. A call that keeps its final (KeepResult) or
// travels on the durable path is never probed: its result outlives its
// caller, who reads it back later. Where no server answers no responders
// (a caller across a supercluster's gateway in optimistic mode, which
// counts a message sent there as delivered) a gone caller is not found:
// its calls run to their end, as without probes.

// probeTokenLen is the length of a call's probe token: 16 random bytes
// in hex.
const probeTokenLen = 32

// probeEvery is how often a running call probes its caller's inbox.
func (s *sender) probeEvery() time.Duration { return max(s.hbEvery, time.Second) }

// goneAfter is how long a call's probes must find its caller's inbox gone
// before the call is cancelled.
func (s *sender) goneAfter() time.Duration {
	return max(s.w.opts.CallerGoneAfter, 3*s.probeEvery())
}

// probes reports whether the call probes its caller's inbox.
func (s *sender) probes() bool {
	return s.dur == nil && !s.keep && s.reply != "" && s.w.opts.CallerGoneAfter > 0
}

// probeDue reports whether the call is to probe now. s.mu is held.
func (s *sender) probeDue(now time.Time) bool {
	if !s.probes() {
		return false
	}
	last := s.probeAt
	if last.IsZero() {
		last = s.started
	}
	return now.Sub(last) >= s.probeEvery()
}

// probe publishes a heartbeat whose reply subject is the call's next
// probe. s.mu is held.
func (s *sender) probe(now time.Time) {
	if s.probeTok == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			s.publish(&wire.Frame{Kind: wire.KindHeartbeat})
			return
		}
		tok := hex.EncodeToString(b[:])
		s.w.mu.Lock()
		if s.w.probes == nil {
			s.w.probes = map[string]*sender{}
		}
		s.w.probes[tok] = s
		s.probeTok = tok // under w.mu too: untrack reads it
		s.w.mu.Unlock()
	}
	if s.probeN > 0 && s.heardN != s.probeN {
		s.goneSince = time.Time{} // the last probe reached the inbox
	}
	s.probeN++
	s.probeAt = now
	s.publishProbe(&wire.Frame{Kind: wire.KindHeartbeat},
		wire.AnswerSubject(s.w.opts.Instance, s.probeTok+"-"+strconv.FormatUint(s.probeN, 10)))
}

// onProbeAnswer takes the server's answer to a probe, token being the
// last token of its subject, and reports whether it was one: a token no
// running call's probes hold (an ask's answer, an ended call's probe, a
// guess) is not. Anything but a no-responders status is no answer to a
// probe (a caller's client never answers one), and is dropped.
func (w *Worker) onProbeAnswer(token string, m *nats.Msg) bool {
	tok, n, ok := strings.Cut(token, "-")
	if !ok || len(tok) != probeTokenLen {
		return false
	}
	w.mu.Lock()
	s := w.probes[tok]
	w.mu.Unlock()
	if s == nil {
		return false
	}
	probe, err := strconv.ParseUint(n, 10, 64)
	if err != nil || !isNoResponders(m) {
		return true
	}
	s.noResponders(probe, time.Now())
	return true
}

// noResponders notes that probe n found the caller's inbox gone, and
// cancels the call once its probes have found it gone for goneAfter.
func (s *sender) noResponders(n uint64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || n != s.probeN || s.heardN == n {
		return // an earlier probe's answer, late: the next probe tells
	}
	s.heardN = n
	if s.goneSince.IsZero() {
		s.goneSince = s.probeAt
	}
	if gone := now.Sub(s.goneSince); gone >= s.goneAfter() && s.ctx.Err() == nil {
		s.w.log.Info("bus: cancelling a call whose caller is gone (nothing subscribes to its reply subject)",
			"tool", s.call.Name, "call", s.id, "for", gone.Round(time.Millisecond))
		s.w.count.callerGone.Add(1)
		s.cancel(toolkit.ErrCallerGone)
	}
}

// publishProbe is publish with a reply subject. s.mu is held.
func (s *sender) publishProbe(f *wire.Frame, probe string) error {
	return s.publishTo(f, probe)
}
