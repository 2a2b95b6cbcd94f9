// Package discovery is how a fleet knows what it serves: each worker's
// Announcer publishes its toolkit's groups and tools (and whatever other
// packages add under Meta: skills, permission defaults) on
// tools.announce.<instance>, and a Fleet merges the live workers'
// announcements into one view, the way one toolkit lists itself.
//
//	ann, err := discovery.NewAnnouncer(nc, tk, &discovery.AnnouncerOptions{Instance: "w1"})
//	...
//	defer ann.Stop() // the goodbye: fleets drop the worker at once
//
//	fleet, err := discovery.NewFleet(ctx, nc, nil) // knows every worker that answered
//	...
//	defer fleet.Close()
//	for _, t := range fleet.Tools() {
//		fmt.Println(t.Name, t.Instances)
//	}
//	c := fleet.Catalog()
//	schemas := c.Schemas(active) // the skill viewer, reset_tools, then basic and the active groups' tools
//
// bus.Serve announces its toolkit with an Announcer, and bus.Client lists
// a session's tools through a Fleet it starts on first use. The wire
// format, the timing and how a fleet keeps its view are in subjects.md,
// section Discovery.
//
// # Guarantees
//
//   - A worker that stops says goodbye and disappears at once; one that
//     dies disappears at most one TTL (3 × its interval) after its last
//     announcement arrived; one whose next announcement has arrived but
//     waits to be read (a fleet busy decoding) is not expired meanwhile.
//     The interval is the one the first message of the worker's run the
//     fleet heard asked, at most (an announcer's does not change within
//     a run): a message forged off its subject asking an hour keeps a
//     dead worker listed no longer than its own TTL.
//   - The messages of one run of an instance (from an Announcer's start
//     to its goodbye) are applied in seq order, whatever order they are
//     read in (a discover answer is read after the broadcasts that
//     arrived within its window). They leave the announcer's connection,
//     and so arrive, in seq order: a message that arrives more than a
//     second after the one applied last is applied whatever its seq, so
//     one forged off the subject with a seq far ahead (2^63, say) shadows
//     the run's real messages only until the first of them that arrives
//     a second after it, not until its TTL; so does a goodbye forged so
//     (the worker is listed again with that message), unless another run
//     of the instance is listed by then. A restart with the same
//     instance id replaces the old entry with its first message,
//     whatever the clocks of the machines say: two runs are ordered by
//     when their messages arrive, never by their start times; the old
//     run's messages arriving later are ignored.
//   - An announcement that cannot be read is ignored and logged; a tool or
//     group in it that cannot be listed is left out and logged, the rest
//     counts. A message that cannot be an announcement at all (a server's
//     answer to a JetStream request naming the subject as its reply
//     subject) is ignored before it can push out a real one, and logged at
//     most once a minute.
//   - A Fleet keeps at most 4,096 instances, whose announcements hold at
//     most 128 MiB: past that, announcements of new instances (and
//     growth past the bytes) are ignored and logged, so a neighbour
//     inventing instance ids cannot grow it. The bytes are those of the
//     announcements decoded, as the fleet estimates them from what they
//     hold (strings, schemas, a fixed cost per tool, group and map), not
//     as received: decoded, an announcement of many small tools takes
//     some ten times its bytes on the wire (20,000 tools with empty
//     schemas: 1.9 MB received, 13 MB on the heap, 12 MB counted), one
//     of long descriptions about the same. So 128 MiB holds about
//     200,000 such small tools in all, and the fleet's merged view,
//     which shares the schemas, adds a fraction of that. One
//     announcement is decoded before it is counted: it takes up to some
//     ten times the server's max_payload, for a moment, when ignored.
//     The ended runs whose late messages it ignores (subjects.md,
//     Goodbye) are at most 16,384, the one that ended first forgotten
//     first past that, whatever TTL it asked, so runs a neighbour makes
//     up push a real one out only by ending 16,384 after it; of them,
//     the goodbyes of instances it does not list (a worker that stops
//     while its discover answer waits to be read) are at most 1,024,
//     counted on their own and forgotten oldest first past that, so
//     goodbyes under invented ids push a real one out only by
//     outnumbering it before its answer is read.
//   - Each type's goroutines end with its Stop or Close, which wait for
//     them.
//
// # Callbacks and logging
//
// A Fleet calls nothing of its user's while it keeps the view, so a
// callback that is slow or never returns freezes nothing: instances still
// appear and expire, and Discover still returns.
//
//   - FleetOptions.Logger is called on a goroutine of the Fleet's own,
//     through a queue of 256 records. Past that (a Logger slower than the
//     log lines come, or one stuck), new records are dropped and counted,
//     and the count is logged as "log records dropped" once the Logger
//     takes records again. Close writes what is queued, and waits for the
//     record being written.
//   - OnChange functions run one at a time on another goroutine of the
//     Fleet's, coalesced: one stuck delays only the later notifications.
//     Close waits for the one running.
//
// Nor does an Announcer call its user's code under the lock its messages
// go out under, so a worker whose callback is slow or never returns goes
// on announcing and answering discover requests, and fleets do not
// expire it.
//
//   - AnnouncerOptions.Logger is called the same way as a Fleet's: on a
//     goroutine of the Announcer's own, through a queue of 256 records,
//     the records past it dropped and counted. Stop writes what is queued.
//   - Each Meta function is called on a goroutine of its own for each
//     announcement (and each answer to a discover request), at most one
//     call of it at a time. An announcement waits for a call at most the
//     announce interval, and at most 1 s, from when the call began; a
//     function that has not returned by then is logged (once per call),
//     its last value goes out meanwhile (none, if it never returned), and
//     it is not called again until it returns; the announcement after it
//     returns carries its value. So a stuck Meta function puts two
//     intervals at most between announcements once (a fleet's TTL is
//     three), and none after. Stop waits for the calls in flight.
package discovery
