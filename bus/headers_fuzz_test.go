package bus

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
)

// FuzzParseHeaders: whatever a caller writes in the Toolbus-Heartbeat,
// Toolbus-Timeout and Toolbus-Groups-Revision headers, the worker reads a
// heartbeat within its bounds, a timeout of no less than zero and no more
// than its clamp, and a revision, or refuses the call naming the header;
// a number a client writes is read as written.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range [][3]string{
		{"1000", "30000", "7"}, {"", "", ""}, {"-5", "-1", "0"}, {"9223372036854775807", "9223372036854775808", "18446744073709551615"},
		{"-9223372036854775809", "99999999999999999999", "18446744073709551616"}, {"1e3", " 5", "+1"}, {"0x10", "1_000", "-0"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	w := &Worker{}
	f.Fuzz(func(t *testing.T, hbv, timeoutv, revv string) {
		h := nats.Header{}
		for k, v := range map[string]string{wire.HeaderHeartbeat: hbv, wire.HeaderTimeout: timeoutv, wire.HeaderGroupsRevision: revv} {
			if v != "" {
				h.Set(k, v)
			}
		}
		hb, timeout, rev, err := w.parseHeaders(h)
		if err != nil {
			if !strings.Contains(err.Error(), "Toolbus-") {
				t.Fatalf("the error names no header: %v", err)
			}
			return
		}
		if hb < MinHeartbeat || hb > MaxHeartbeat {
			t.Fatalf("heartbeat %q read as %v", hbv, hb)
		}
		if timeoutv == "" && timeout != nil || timeoutv != "" && (timeout == nil || *timeout < 0 || *timeout > time.Duration(maxTimeoutMS)*time.Millisecond) {
			t.Fatalf("timeout %q read as %v", timeoutv, timeout)
		}
		if ms, err := strconv.ParseInt(timeoutv, 10, 64); err == nil && ms >= 0 && ms <= maxTimeoutMS && *timeout != time.Duration(ms)*time.Millisecond {
			t.Fatalf("timeout %q read as %v", timeoutv, *timeout)
		}
		if r, err := strconv.ParseUint(revv, 10, 64); err == nil && r != rev {
			t.Fatalf("revision %q read as %d", revv, rev)
		}
	})
}
