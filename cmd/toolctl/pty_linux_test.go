package main

import (
	"io"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
)

// toolctlOnTerminal runs toolctl with its stdout a terminal and returns
// what the terminal got (its line discipline's "\r\n" read back as
// "\n") and stderr.
func toolctlOnTerminal(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	master, slave := ostest.OpenPTY(t)
	defer master.Close()
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // until the slave is closed (EIO)
		read <- string(b)
	}()
	var errb strings.Builder
	code = run(natstest.Ctx(t), args, strings.NewReader(""), slave, &errb)
	slave.Close()
	return code, strings.ReplaceAll(<-read, "\r\n", "\n"), errb.String()
}
