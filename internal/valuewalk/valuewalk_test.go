package valuewalk

import (
	"math"
	"testing"
)

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

// pair is a struct held by value in an interface: two of them hold the
// same copy of it.
type pair struct{ A, B any }

// TestWalkCountsValuesSharedThroughInterfaces: a value a few hundred
// bytes in memory whose levels are arrays or structs held by value in
// interfaces, each holding the same next level twice, doubles at each
// of its levels when written, as one of pointers does; the walk counts
// a level met again without walking it again, as it counts a pointer's,
// where it walked every way to it until its bound of values (forty
// levels: a quarter of a minute of a worker's time for each value).
func TestWalkCountsValuesSharedThroughInterfaces(t *testing.T) {
	const depth = 24
	var array, strct any
	for range depth {
		array = [2]any{array, array}
		strct = pair{strct, strct}
	}
	for name, v := range map[string]any{"an array": array, "a struct": strct} {
		w := walk{rules: JSON, maxSteps: 4 * depth, nodes: math.MaxInt}
		if err := w.walk(v); err != nil {
			t.Errorf("%s: %v, want nil", name, err)
			continue
		}
		// The value at the top, and below it two interfaces, each holding
		// the next level (two values and two more interfaces) or nil.
		if want := 1 + 2*(3<<(depth-1)-2); w.counted != want {
			t.Errorf("%s: counted %d values, want %d", name, w.counted, want)
		}
		if w.visited > 4*memoAfter {
			t.Errorf("%s: walked %d values to count them, want at most %d", name, w.visited, 4*memoAfter)
		}
	}
	numbers := make([]any, 4*memoAfter)
	for i := range numbers {
		numbers[i] = float64(i)
	}
	w := walk{rules: JSON, maxSteps: 10, nodes: math.MaxInt}
	if err := w.walk(numbers); err != nil || len(w.memo) != 0 {
		t.Errorf("a list of %d numbers: %v, noted %d values, want nil and none (each is counted at once)", len(numbers), err, len(w.memo))
	}
}
