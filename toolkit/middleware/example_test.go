package middleware_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

type WeatherIn struct {
	City string `json:"city" jsonschema:"The city."`
}

func Example() {
	// A logger without the varying fields, so the output is stable.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" || a.Key == "error" { // the error says when to retry
				return slog.Attr{}
			}
			return a
		},
	}))

	tk := toolkit.New(nil)
	tk.Use(
		middleware.Logging(logger),
		middleware.RateLimit{Rate: 1, Burst: 2}.Middleware(),
		middleware.Cache{TTL: time.Minute}.Middleware(),
		middleware.Retry{}.Middleware(),
		middleware.Timeout{Default: 10 * time.Second}.Middleware(),
	)
	runs := 0
	err := tk.Add(toolkit.Func("weather", "Current weather in a city.",
		func(ctx context.Context, in WeatherIn) (string, error) {
			runs++
			return "sunny in " + in.City, nil
		}), toolkit.ReadOnly())
	if err != nil {
		panic(err)
	}

	for i := range 3 {
		resp := tk.Invoke(context.Background(), toolkit.ToolCall{
			ID: fmt.Sprint("c", i), Name: "weather", Session: "s1", Input: map[string]any{"city": "Paris"},
		})
		if resp.State == toolkit.StateSuccess {
			fmt.Println("->", resp.Text())
		} else {
			fmt.Println("->", resp.Code, "retry later:", resp.Metadata["retry_after_ms"] != nil)
		}
	}
	fmt.Println("the tool ran", runs, "time(s)")
	// Output:
	// level=INFO msg="tool call" tool=weather call=c0 session=s1 state=success code="" chunks=1
	// -> sunny in Paris
	// level=INFO msg="tool call" tool=weather call=c1 session=s1 state=success code="" chunks=1
	// -> sunny in Paris
	// level=WARN msg="tool call" tool=weather call=c2 session=s1 state=error code=overloaded chunks=0
	// -> overloaded retry later: true
	// the tool ran 1 time(s)
}
