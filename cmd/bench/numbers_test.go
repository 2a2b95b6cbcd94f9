package main

import (
	"io"
	"strings"
	"testing"
)

// The separate-process pass runs at 64 callers whatever -c says: -n 10
// -c 1,4 (no -s, so the pass is on) was taken, and its c=64 points, of
// 10 calls each, never had 64 in flight.
func TestFewCallsRefusedForTheProcPass(t *testing.T) {
	_, err := parseFlags([]string{"-n", "10", "-c", "1,4"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--procs") {
		t.Errorf("-n 10 -c 1,4 with the separate-process pass: err = %v, want it refused naming --procs", err)
	}
	for _, args := range [][]string{{"-n", "10", "-c", "1,4", "--procs=false"}, {"-n", "64", "-c", "1,4"}, {"-n", "10", "-c", "1,4", "-s", "echo"}} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}
