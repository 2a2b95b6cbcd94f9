package toolkit

import (
	"fmt"
	"slices"
)

// LogMessage is a log message a tool sends to whoever called it, as MCP's
// notifications/message carries one: a level (LogLevels), an optional
// logger name and any JSON data.
type LogMessage struct {
	Level  string `json:"level" msgpack:"level"`
	Logger string `json:"logger,omitempty" msgpack:"logger,omitempty"`
	Data   any    `json:"data" msgpack:"data"`
}

// LogLevels are the levels of a LogMessage, least severe first (MCP's,
// from syslog).
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogWriter is a Writer that passes log messages on to the caller: the
// bus carries them as log frames, the MCP gateway as notifications/message,
// toolkit.Call yields them as Event.Log.
type LogWriter interface {
	Log(m LogMessage) error
}

// Log sends m to the call's caller through w when w can carry it (a
// LogWriter); otherwise it is dropped and Log returns nil. A level that
// is not one of LogLevels is an error.
func Log(w Writer, m LogMessage) error {
	if !slices.Contains(LogLevels, m.Level) {
		return fmt.Errorf("toolkit: log level %q: want one of %v", m.Level, LogLevels)
	}
	if lw, ok := w.(LogWriter); ok {
		return lw.Log(m)
	}
	return nil
}
