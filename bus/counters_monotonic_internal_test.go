package bus

import (
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestCountersNeverGoBack: a frame is counted before its publish and
// taken back when the publish fails (a connection closed or reconnecting
// with its buffer full), so a scrape between the two read one frame more
// than the next scrape did: toolbus_worker_frames_total and
// toolbus_worker_sent_bytes_total went down, which Prometheus takes for a
// counter reset (rate() then counts the whole total again). What Counters
// reports now never goes back: a frame taken back after it was reported
// stays counted until the frames sent since pass it.
func TestCountersNeverGoBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	w := serveEcho(t, s, WorkerOptions{})
	for _, k := range frameKinds {
		before := w.Counters()
		// publishProbe's steps for a frame whose publish fails, with a
		// scrape while the publish is on its way.
		w.count.sent(k, 100)
		during := w.Counters()
		w.count.unsent(k, 100)
		after := w.Counters()
		if during.Frames[k] != before.Frames[k]+1 || during.SentBytes != before.SentBytes+100 {
			t.Fatalf("%s: a frame on its way: %d frames, %d bytes; want %d, %d", k, during.Frames[k], during.SentBytes, before.Frames[k]+1, before.SentBytes+100)
		}
		if after.Frames[k] < during.Frames[k] || after.SentBytes < during.SentBytes {
			t.Errorf("%s: frames %d, then %d; bytes %d, then %d: a counter went down", k, during.Frames[k], after.Frames[k], during.SentBytes, after.SentBytes)
		}
		// A frame sent since is counted past the one taken back.
		w.count.sent(k, 100)
		w.count.sent(k, 100)
		if n := w.Counters(); n.Frames[k] != before.Frames[k]+2 || n.SentBytes != before.SentBytes+200 {
			t.Errorf("%s: two frames sent after one taken back: %d frames, %d bytes; want %d, %d", k, n.Frames[k], n.SentBytes, before.Frames[k]+2, before.SentBytes+200)
		}
	}
}
