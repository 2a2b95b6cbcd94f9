package bus_test

import (
	"context"
	"fmt"
	"log"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/toolkit"
)

func Example() {
	srv, err := embedded.Start(nil) // in-process only, JetStream in a temp dir
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()

	tk := toolkit.New(nil)
	err = tk.Add(toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		}))
	if err != nil {
		log.Fatal(err)
	}

	wnc, _ := srv.Connect()
	defer wnc.Close()
	w, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	cnc, _ := srv.Connect()
	defer cnc.Close()
	c, _ := bus.NewClient(cnc, nil)
	defer c.Close()
	var fleet toolkit.Caller = c // the local Toolkit's surface, served by the fleet

	for ev := range fleet.Call(context.Background(), toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "hi"}}) {
		if ev.Final != nil {
			fmt.Println(ev.Final.ID, ev.Final.State, ev.Final.Text(), ev.Final.Metadata[wire.MetaWorker])
		}
	}
	resp := fleet.Invoke(context.Background(), toolkit.ToolCall{Name: "nope"})
	fmt.Println(resp.Code)
	// Output:
	// c1 success hi w1
	// not_found
}
