package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o headersOptions
	register(&command{
		name:    "mcp-headers",
		args:    "SERVER [NAME=VALUE...]",
		summary: "replace the headers the workers send to an HTTP MCP server, without a new session (none: back to the configured ones)",
		flags:   o.register,
		run:     o.run,
	})
}

type headersOptions struct {
	fs       *flag.FlagSet
	instance string
	wait     time.Duration
}

func (o *headersOptions) register(fs *flag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.instance, "instance", "", "only this worker `instance` (default: every live worker)")
	config.DurationVar(fs, &o.wait, "wait", discovery.DefaultDiscoverWindow, "how long to collect the workers' answers when finding them (a `duration`)")
}

func (o *headersOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		return e.usagef("mcp-headers takes a server name and headers: toolctl mcp-headers SERVER [NAME=VALUE...]")
	}
	if !toolkit.ValidName(args[0]) {
		// No worker mounts it: the fleet would only say so, after its --wait.
		return e.usagef("invalid server name %s: MCP server names are letters, digits, '_' and '-' (the name under mcp_servers)", wire.Quote(args[0]))
	}
	req := wire.HeadersRequest{Server: args[0], Headers: map[string]string{}}
	for _, kv := range args[1:] {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return e.usagef("invalid header %q: write NAME=VALUE", kv)
		}
		for other := range req.Headers {
			if strings.EqualFold(other, name) { // HTTP names ignore case
				return e.usagef("header %s given twice: give each header once", name)
			}
		}
		req.Headers[name] = value
	}
	if emptyFlag(o.fs, "instance") {
		// --instance "$W" with W unset would replace them on every worker.
		return e.usagef("--instance needs a worker instance name; leave it out for every live worker")
	}
	if o.instance != "" && !toolkit.ValidName(o.instance) {
		return e.usagef("invalid instance %q", o.instance)
	}
	if o.wait <= 0 {
		return e.usagef("--wait must be positive, got %v", o.wait)
	}
	instances := []string{o.instance}
	if o.instance == "" {
		_, fleet, code := e.fleet(ctx, o.wait)
		if fleet == nil {
			return code
		}
		instances = nil
		for _, in := range fleet.Instances() {
			instances = append(instances, in.ID)
		}
	}
	nc, err := e.conn()
	if err != nil {
		return exitCode(err)
	}
	body, err := wire.Msgpack.Marshal(&req)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	code := exitOK
	applied := 0
	for _, id := range instances {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := nc.RequestWithContext(rctx, wire.HeadersSubject(id), body)
		cancel()
		if errors.Is(context.Cause(ctx), errRefused) {
			return exitUsage // the server refused the request to these credentials: run says why
		}
		if err != nil {
			if o.instance != "" {
				fmt.Fprintf(e.stderr, "toolctl: worker %s: %v (it serves no MCP servers, or is gone)\n", id, err)
				code = exitError
			}
			continue // a worker without mcp_servers does not listen
		}
		var reply wire.HeadersReply
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &reply); err != nil {
			fmt.Fprintf(e.stderr, "toolctl: worker %s: undecodable reply: %v\n", id, err)
			code = exitError
			continue
		}
		switch {
		case reply.OK:
			applied++
			if len(req.Headers) == 0 {
				fmt.Fprintf(e.stdout, "%s: headers of %s back to the configured ones\n", id, req.Server)
			} else {
				fmt.Fprintf(e.stdout, "%s: headers of %s replaced\n", id, req.Server)
			}
		case strings.Contains(reply.Error, "no MCP server named"):
			if o.instance != "" {
				fmt.Fprintf(e.stderr, "toolctl: worker %s: %s\n", id, printableText(reply.Error))
				code = exitError
			}
		default:
			fmt.Fprintf(e.stderr, "toolctl: worker %s: %s\n", id, printableText(reply.Error))
			code = exitError
		}
	}
	if applied == 0 && code == exitOK {
		fmt.Fprintf(e.stderr, "toolctl: no worker serves an MCP server named %q\n", req.Server)
		return exitError
	}
	return code
}
