package valuewalk

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
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

// TestWalkCountsWhatStringsAndListsWrite: encoding/json writes a string,
// a []byte or a list met many times (one inner list or one long string
// a list holds a hundred thousand times) each time, and builds what it
// writes in memory, where no buffer of the caller's bounds it; the walk
// of its rules counts their bytes and values, so a value a few MiB in
// memory that writes gigabytes is refused, and a large value that writes
// about what it holds is not.
func TestWalkCountsWhatStringsAndListsWrite(t *testing.T) {
	const maxValues = 64 << 20
	long := strings.Repeat("x", 1<<20)
	inner := make([]string, 1000)
	for i := range inner {
		inner[i] = strings.Repeat("y", 100)
	}
	numbers := make([][64]int64, 1000)
	sameList := make([][]string, 100_000)
	sameString := make([]string, 1000)
	sameRaw := make([]json.RawMessage, 1000)
	sameBytes := make([][]byte, 1000)
	sameNumbers := make([][][64]int64, 100_000)
	sameInMap := make(map[string][]string, 100_000)
	numbersMap := make(map[int]float64, 1000)
	for i := range 1000 {
		numbersMap[i] = float64(i)
	}
	sameNumbersMap := make([]map[int]float64, 100_000)
	for i := range sameList {
		sameList[i] = inner
		sameNumbers[i] = numbers
		sameInMap[strconv.Itoa(i)] = inner
		sameNumbersMap[i] = numbersMap
	}
	raw, bytes := json.RawMessage(`"`+long+`"`), []byte(long)
	for i := range sameString {
		sameString[i], sameRaw[i], sameBytes[i] = long, raw, bytes
	}
	for name, v := range map[string]any{
		"a list holding one list of strings 100,000 times":    sameList,
		"a list holding one 1 MiB string 1000 times":          sameString,
		"a list holding one 1 MiB json.RawMessage 1000 times": sameRaw,
		"a list holding one 1 MiB []byte 1000 times":          sameBytes,
		"a list holding one list of arrays 100,000 times":     sameNumbers,
		"a map holding one list of strings 100,000 times":     sameInMap,
		"a list holding one map of numbers 100,000 times":     sameNumbersMap,
		"the same in a map[string]any":                        map[string]any{"v": sameList},
	} {
		if err := JSON.Walk(v, 100, maxValues); err != ErrTooLarge {
			t.Errorf("%s: %v, want %v", name, err, ErrTooLarge)
		}
	}
	type item struct {
		Name string
		Tags []string
		Next *item
	}
	large := make([]*item, 50_000)
	for i := range large {
		large[i] = &item{Name: strconv.Itoa(i), Tags: []string{"a", "b"}}
		if i%2 == 1 {
			large[i].Next = large[i-1] // written again below the next item
		}
	}
	b, err := json.Marshal(large)
	if err != nil {
		t.Fatal(err)
	}
	if err := JSON.Walk(large, 100, len(b)); err != nil {
		t.Errorf("a list of %d items writing %d bytes: %v, want nil", len(large), len(b), err)
	}
}
