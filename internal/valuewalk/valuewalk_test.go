package valuewalk

import "testing"

type node struct{ A, B *node }

// count is how many values a walk counts in n: the pointer, and the
// struct with its two fields when it is not nil.
func count(n *node) int {
	if n == nil {
		return 1
	}
	return 2 + count(n.A) + count(n.B)
}

// TestWalkCountsSharedValues: a value whose two fields point to the
// same next node is counted as the encoder writes it, each node once
// for each way to it, though past memoAfter values the walk counts a
// node met again without walking it again: the walk refuses it at one
// value fewer than it holds, and one step shallower than it goes, not
// sooner or later.
func TestWalkCountsSharedValues(t *testing.T) {
	var n *node
	const depth = 18
	for range depth {
		n = &node{A: n, B: n}
	}
	values := count(n)
	if values <= memoAfter {
		t.Fatalf("the value holds %d values, want more than %d, where the walk notes what it walked", values, memoAfter)
	}
	steps := 2*depth + 1 // a pointer and a struct each level, and the nil pointers below
	if err := JSON.Walk(n, steps, values); err != nil {
		t.Errorf("Walk(%d steps, %d values): %v, want nil", steps, values, err)
	}
	if err := JSON.Walk(n, steps, values-1); err != ErrTooLarge {
		t.Errorf("Walk(%d steps, %d values): %v, want %v", steps, values-1, err, ErrTooLarge)
	}
	if err := JSON.Walk(n, steps-1, values); err != ErrTooDeep {
		t.Errorf("Walk(%d steps, %d values): %v, want %v", steps-1, values, err, ErrTooDeep)
	}
}
