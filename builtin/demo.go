package builtin

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

type echoInput struct {
	Text string `json:"text" jsonschema:"The text to echo."`
}

type sleepInput struct {
	Seconds float64 `json:"seconds" jsonschema:"How long to sleep, in seconds (fractions allowed)."`
}

func echoTool() *toolkit.Tool {
	return toolkit.Func(Echo, "Return the text unchanged. For smoke tests and benchmarks.",
		func(_ context.Context, in echoInput) (string, error) { return in.Text, nil })
}

// sleepTool sleeps, reporting progress about once a second, and stops at
// once when the call is cancelled or its deadline passes.
func sleepTool(maxSleep time.Duration) *toolkit.Tool {
	t := toolkit.Stream(Sleep,
		"Sleep for the given number of seconds, reporting progress every second, then say how long it slept. "+
			"For smoke tests and benchmarks.",
		func(ctx context.Context, in sleepInput, w toolkit.Writer) error {
			if in.Seconds < 0 || math.IsNaN(in.Seconds) || in.Seconds > maxSleep.Seconds() {
				return toolkit.Errorf(toolkit.CodeInvalidInput,
					"InvalidArgumentsError: seconds must be between 0 and %g, got %g.", maxSleep.Seconds(), in.Seconds)
			}
			total := time.Duration(in.Seconds * float64(time.Second))
			start := time.Now()
			deadline := time.NewTimer(total)
			defer deadline.Stop()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-deadline.C:
					return w.Write(toolkit.Text(fmt.Sprintf("Slept for %g seconds.", in.Seconds)))
				case <-tick.C:
					done := time.Since(start).Seconds()
					err := w.Progress(toolkit.Progress{
						Progress: math.Floor(done),
						Total:    in.Seconds,
						Message:  fmt.Sprintf("slept %.0f of %g seconds", done, in.Seconds),
					})
					if err != nil {
						return err
					}
				}
			}
		})
	p := prop(t, "seconds")
	p["minimum"] = 0
	p["maximum"] = maxSleep.Seconds()
	return t
}
