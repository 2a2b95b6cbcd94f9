package callspan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestBoundTraceState: a caller's tracestate is cut to MaxTraceState
// bytes as W3C Trace Context has a vendor cut one (members over 128 bytes
// dropped first, then members from the end); one within the bound is
// kept as it came, and the span context stays the caller's otherwise.
func TestBoundTraceState(t *testing.T) {
	member := func(i, n int) string { // member i of n bytes in all
		k := fmt.Sprintf("k%02d", i)
		return k + "=" + strings.Repeat("v", n-len(k)-1)
	}
	var small, huge []string
	for i := range 10 {
		small = append(small, member(i, 60)) // 10 of 60 bytes: 609 in all
	}
	for i := range 32 {
		huge = append(huge, fmt.Sprintf("k%03d%s=%s", i, strings.Repeat("a", 252), strings.Repeat("v", 256)))
	}
	for _, tt := range []struct {
		name, in, want string
	}{
		{"none", "", ""},
		{"within", "a=1,b=2", "a=1,b=2"},
		{"exactly the bound", member(0, 200) + "," + member(1, 100) + "," + member(2, 100) + "," + member(3, 109), member(0, 200) + "," + member(1, 100) + "," + member(2, 100) + "," + member(3, 109)},
		{"from the end", strings.Join(small, ","), strings.Join(small[:8], ",")},
		{"long ones first", member(0, 200) + "," + strings.Join(small[1:], ","), strings.Join(small[1:9], ",")},
		{"32 long members", strings.Join(huge, ","), ""},
		{"long ones first, then from the end", strings.Join(append(append([]string{}, huge[:3]...), small...), ","), strings.Join(small[:8], ",")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := trace.ParseTraceState(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
			got := trace.SpanContextFromContext(BoundTraceState(trace.ContextWithRemoteSpanContext(context.Background(), sc)))
			if s := got.TraceState().String(); s != tt.want {
				t.Errorf("tracestate of %d bytes kept as %d bytes %.80q…, want %d bytes %.80q…", len(tt.in), len(s), s, len(tt.want), tt.want)
			}
			if len(got.TraceState().String()) > MaxTraceState {
				t.Errorf("%d bytes kept, over %d", len(got.TraceState().String()), MaxTraceState)
			}
			if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || got.TraceFlags() != sc.TraceFlags() || !got.IsRemote() {
				t.Errorf("span context %v, want the caller's %v", got, sc)
			}
		})
	}
}
