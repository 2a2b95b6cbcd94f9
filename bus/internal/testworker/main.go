// Command testworker is a minimal worker process for the bus tests: it
// connects to --nats, serves "echo" and "sleep", prints "ready" on stdout
// once its subscriptions are in place, and stops gracefully on SIGTERM.
// Tests kill it with SIGKILL to lose a worker mid-call.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
)

type echoIn struct {
	Text string `json:"text"`
}

type sleepIn struct {
	Seconds float64 `json:"seconds"`
}

func main() {
	url := flag.String("nats", nats.DefaultURL, "NATS server URL")
	queue := flag.String("queue", bus.DefaultQueue, "queue group")
	instance := flag.String("instance", "", "instance id")
	flag.Parse()

	tk := toolkit.New(nil)
	must(tk.Add(toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in echoIn) (string, error) { return in.Text, nil })))
	must(tk.Add(toolkit.Stream("sleep", "Sleep for the given seconds, reporting progress when it starts.",
		func(ctx context.Context, in sleepIn, w toolkit.Writer) error {
			if err := w.Progress(toolkit.Progress{Progress: 0, Total: in.Seconds, Message: "sleeping"}); err != nil {
				return err
			}
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
				return w.Write(toolkit.Text("slept"))
			case <-ctx.Done():
				return ctx.Err()
			}
		})))
	// 10 s for the handshake, not nats.go's 2 s, which a loaded machine
	// goes past (as internal/natstest's connections do).
	nc, err := nats.Connect(*url, nats.Timeout(10*time.Second))
	must(err)
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Queue: *queue, Instance: *instance})
	must(err)
	fmt.Println("ready", w.Instance())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.Stop(ctx)
	nc.Drain()
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
