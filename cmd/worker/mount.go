package main

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// A mount adds what another package provides to the worker's toolkit: the
// tools of MCP servers, skills, permission checks. Each lives in a file of
// its own in this package and registers itself from init:
//
//	func init() { addMount("skills", mountSkills) }
//
// Mounts start in name order, after the configured groups and the built-in
// tools are registered and before the worker subscribes, so their tools
// are served from the first call (tools they add later are picked up live).
// A mount that fails stops the start. The stop function it returns (nil
// for none) runs after the worker has drained, in reverse order.
//
// A mount may also register a check (addCheck) that --check-config runs
// on a valid configuration: it returns errors (exit 2) and warnings
// (printed; the worker would still start).
type mount struct {
	name  string
	start func(ctx context.Context, env *mountEnv) (stop func(), err error)
}

var mounts []mount

// addMount registers a mount; call it from init.
func addMount(name string, start func(ctx context.Context, env *mountEnv) (stop func(), err error)) {
	mounts = append(mounts, mount{name: name, start: start})
}

// mountEnv is what a mount gets to work with.
type mountEnv struct {
	Config *config.Config
	// Toolkit is the worker's toolkit: add tools and groups to it.
	Toolkit *toolkit.Toolkit
	// Conn and JetStream are the worker's NATS connection (shared: do not
	// close it).
	Conn      *nats.Conn
	JetStream jetstream.JetStream
	// KVReplicas are the replicas of a KV bucket this worker creates.
	KVReplicas int
	Instance   string
	Logger     *slog.Logger
	// Tracer records spans when traces are on (nil: off).
	Tracer trace.Tracer
	// Policy is the permission policy the worker checks (set by the
	// permission mount; nil: none), compared with the fleet's before the
	// worker serves.
	Policy *permission.Announced

	middleware []toolkit.Middleware
	meta       map[string]func() any
	mcp        *mcp.Servers // the mcp mount's, for metrics and /readyz
}

// Use adds middleware to every call, inside the logging middleware and
// outside the rate limits and timeouts, in the order of the calls to Use.
func (e *mountEnv) Use(mws ...toolkit.Middleware) { e.middleware = append(e.middleware, mws...) }

// Announce adds a part to the worker's announcements, under key
// (discovery.AnnouncerOptions.Meta).
func (e *mountEnv) Announce(key string, part func() any) {
	if e.meta == nil {
		e.meta = map[string]func() any{}
	}
	e.meta[key] = part
}
