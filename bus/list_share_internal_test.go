package bus

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestListQueueShare: one caller's large list requests (each as large as
// a server's default max_payload) fill its own share of the queue, not
// all of it: another caller's request is still taken. They filled the
// 64 MiB of the whole queue, and every other caller's listing was
// answered BusyError while they waited.
func TestListQueueShare(t *testing.T) {
	l := newListQueue()
	l.listers = maxListers // no lister starts: every request stays queued
	// As much as alice may queue: requests of 1 MiB until one is
	// refused, then of half as much, down to one byte.
	refused := ""
	for size := 1<<20 - 1024; size > 0; size /= 2 {
		for i := 0; i < maxListsPerCaller; i++ {
			refused = l.add(nil, &nats.Msg{Subject: "tools.list.alice", Reply: "_INBOX.alice.x.l", Data: make([]byte, size)}, "alice")
			if refused != "" {
				break
			}
		}
	}
	if !strings.Contains(refused, "BusyError") {
		t.Fatalf("alice's requests were all queued (%d bytes), or refused so: %q", l.bytes, refused)
	}
	if why := l.add(nil, &nats.Msg{Subject: "tools.list.bob", Reply: "_INBOX.bob.x.l", Data: []byte(`{"session":"s"}`)}, "bob"); why != "" {
		t.Errorf("bob's list request, with alice's %d bytes waiting: %s", l.by["alice"].bytes, why)
	}
}
