package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionMemoryBoundedByBytes: a worker remembers the sessions it
// holds (owned) and its writes of their pins (wrote) by their keys, up
// to maxOwned of each. A session's key may be up to
// wire.MaxSessionKeyLen bytes, so a caller inventing long session names
// made one worker keep up to 100,000 KiB-long keys in each: some 200 MiB
// of key bytes alone. Each memory is bounded by its keys' bytes too
// (maxOwnedBytes), past which it is cleared as past maxOwned.
func TestSessionMemoryBoundedByBytes(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	w := serve(t, nc, toolkit.New(nil), &WorkerOptions{Instance: "a", Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	a := w.aff
	name := func(i int) string { // a valid name: its key is itself, 1000 bytes
		n := fmt.Sprintf("s%d-", i)
		return n + strings.Repeat("x", 1000-len(n))
	}
	keyBytes := func() (owned, wrote int) {
		a.mu.Lock()
		defer a.mu.Unlock()
		for k := range a.owned {
			owned += len(k)
		}
		for k := range a.wrote {
			wrote += len(k)
		}
		return owned, wrote
	}
	// Through the call path: a long session's key is remembered.
	in := &incoming{header: nats.Header{}}
	if p, to, _ := a.route(in, name(-1)); !p.here || to != "" {
		t.Fatalf("claim: %+v, %q", p, to)
	}
	if owned, wrote := keyBytes(); owned != 1000 || wrote != 1000 {
		t.Fatalf("after one session of a 1000-byte key: %d bytes of keys held, %d of writes; want 1000 each", owned, wrote)
	}
	n := maxOwnedBytes/1000 + 2000 // well under maxOwned
	for i := range n {
		a.forget(name(i))
	}
	// One write of a pin through pinHere, the rest noted as it notes
	// them (real writes of 18,000 pins took 18 s under -race).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	key, err := wire.SessionKey(name(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.pinHere(ctx, key, 0); err != nil {
		t.Fatalf("pinning session 0: %v", err)
	}
	for i := 1; i < n; i++ {
		key, err := wire.SessionKey(name(i))
		if err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		a.noteWrite(key, pinWrite{rev: 1, at: time.Now()})
		a.mu.Unlock()
	}
	owned, wrote := keyBytes()
	if owned > maxOwnedBytes || wrote > maxOwnedBytes {
		t.Errorf("after %d sessions of 1000-byte keys the worker keeps %d KiB of keys of sessions held and %d KiB of its writes' keys; want at most %d KiB each",
			n, owned>>10, wrote>>10, maxOwnedBytes>>10)
	}
	if owned == 0 || wrote == 0 {
		t.Errorf("%d and %d bytes of keys kept: the latest sessions should be remembered", owned, wrote)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ownedBytes != owned || a.wroteBytes != wrote {
		t.Errorf("the worker counts %d and %d bytes of keys; its maps hold %d and %d", a.ownedBytes, a.wroteBytes, owned, wrote)
	}
}

// At the byte bound, noting a session already remembered again cleared
// the memory (its bytes were counted as if new): every session held was
// then served after a read of its pin. A key already held costs nothing.
func TestSessionMemoryKeepsAKeyAgainAtItsBound(t *testing.T) {
	a := &affinity{owned: map[string]held{}, wrote: map[string]pinWrite{}}
	key := strings.Repeat("k", 1000)
	a.hold(key, held{})
	a.noteWrite(key, pinWrite{})
	// Filled while another fits: then the key's own bytes no longer do.
	for i := 0; ; i++ {
		k := fmt.Sprintf("%d-%s", i, key[:990])
		if a.ownedBytes+len(k) > maxOwnedBytes {
			break
		}
		a.hold(k, held{})
		a.noteWrite(k, pinWrite{})
	}
	if a.ownedBytes+len(key) <= maxOwnedBytes {
		t.Fatalf("%d bytes held: the key would fit again", a.ownedBytes)
	}
	owned, wrote := len(a.owned), len(a.wrote)
	a.hold(key, held{gaveUp: true})
	a.noteWrite(key, pinWrite{rev: 2})
	if len(a.owned) != owned || len(a.wrote) != wrote {
		t.Errorf("noting a remembered session again at the bound left %d of %d sessions held and %d of %d writes", len(a.owned), owned, len(a.wrote), wrote)
	}
	if !a.owned[key].gaveUp || a.wrote[key].rev != 2 {
		t.Errorf("the session noted again is not updated: %+v, %+v", a.owned[key], a.wrote[key])
	}
}
