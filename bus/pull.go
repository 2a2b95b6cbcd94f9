package bus

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
)

// pullBatch is what one pull request brings of a consumer's messages.
//
// jetstream's Fetch is not used for durable calls: it takes any message
// without a body and with a Status header for the server's own status,
// and a 404 or 408 ends its pull there (other codes end it with an
// error). The calls stream stores such messages when anyone publishes
// one on a durable subject: a caller's own publish, or the server's 404
// or 503 answer to a request whose reply subject named a durable subject
// (NATS does not check reply subjects). Each would end the pull it came
// in, and the calls delivered after it in that pull would wait out
// AckWait. Here a message is the server's status only when it has no
// reply subject: every delivered message has its acknowledgement subject
// as its reply. A stored look-alike is delivered as the message it is,
// which the durable path ends in the stream (notACall).
type pullBatch struct {
	msgs chan *nats.Msg // the deliveries; closed when the pull ended

	mu    sync.Mutex
	ended bool
	err   error // why the pull failed; nil when it ended as pulls do
	got   int
	sub   *nats.Subscription
	timer *time.Timer
}

// pull asks consumer cons (of js) for up to n messages, waiting up to
// wait for them to come.
func pull(js jetstream.JetStream, cons jetstream.Consumer, n int, wait time.Duration) (*pullBatch, error) {
	info := cons.CachedInfo()
	nc := js.Conn()
	b := &pullBatch{msgs: make(chan *nats.Msg, n)}
	b.mu.Lock() // the handler waits until the batch is whole
	defer b.mu.Unlock()
	var err error
	if b.sub, err = nc.Subscribe(nc.NewInbox(), func(m *nats.Msg) { b.receive(m, n) }); err != nil {
		return nil, err
	}
	// The server ends the pull after wait (408); the timer is in case
	// that status is lost, as jetstream's Fetch has one.
	b.timer = time.AfterFunc(wait+time.Second, func() { b.end(nil) })
	req := `{"batch":` + strconv.Itoa(n) + `,"expires":` + strconv.FormatInt(wait.Nanoseconds(), 10) + `}`
	subject := kv.APIPrefix(js) + "CONSUMER.MSG.NEXT." + info.Stream + "." + info.Name
	if err := nc.PublishRequest(subject, b.sub.Subject, []byte(req)); err != nil {
		b.timer.Stop()
		b.sub.Unsubscribe()
		return nil, err
	}
	return b, nil
}

// receive takes one message of the pull's inbox.
func (b *pullBatch) receive(m *nats.Msg, n int) {
	if m.Reply != "" {
		if !strings.HasPrefix(m.Reply, jsAckPrefix) {
			return // no delivery: nothing the server sends a pull
		}
		b.mu.Lock()
		if b.ended {
			b.mu.Unlock()
			return // after the pull ended: delivered again after AckWait
		}
		b.msgs <- m // room for n
		b.got++
		whole := b.got == n
		b.mu.Unlock()
		if whole {
			b.end(nil)
		}
		return
	}
	switch code := m.Header.Get("Status"); code {
	case "":
		// Neither a delivery nor a status.
	case "100":
		// A heartbeat (none is asked for) or flow control.
	case "404", "408":
		b.end(nil) // no more messages; the pull expired
	default:
		b.end(pullError(code, m.Header.Get("Description")))
	}
}

// jsAckPrefix begins the reply subject of every message a consumer
// delivers (its acknowledgement subject).
const jsAckPrefix = "$JS.ACK."

// pullError is a pull's status that is not its end.
func pullError(code, description string) error {
	if code == "503" {
		return nats.ErrNoResponders
	}
	return errors.New("nats: pull ended with status " + code + ": " + description)
}

// end ends the pull, once: no message comes after.
func (b *pullBatch) end(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.ended, b.err = true, err
	b.timer.Stop()
	b.sub.Unsubscribe()
	close(b.msgs)
}

// Messages are the pull's deliveries, until it ended.
func (b *pullBatch) Messages() <-chan *nats.Msg { return b.msgs }

// Error is why the pull failed, once Messages is closed; nil when it
// ended as pulls do (its batch whole, no more messages, expired).
func (b *pullBatch) Error() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
