package mcp

import "syscall"

// stdioUnsupported says why stdio servers cannot run on Windows: a
// server's process tree is ended whole (session.kill), and Windows has no
// process groups to end it by.
const stdioUnsupported = "the stdio transport is not available on windows: a stdio server is ended with every process it started, which needs process groups; use streamable_http or sse"

// serverProcAttr and killGroup are never used: stdio servers are refused.
func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
func killGroup(int)                        {}
