package toolkit_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// described is a raw tool whose description tells registrations of one
// name apart.
func described(name, desc string) *toolkit.Tool {
	return toolkit.Raw(name, desc, nil, nopHandler)
}

func reg(t *toolkit.Tool, opts ...toolkit.Option) toolkit.Registration {
	return toolkit.Registration{Tool: t, Options: opts}
}

// listing is the toolkit's tools as "name:description:group", in order.
func listing(tk *toolkit.Toolkit) []string {
	var out []string
	for _, t := range tk.Tools() {
		out = append(out, t.Name+":"+t.Description+":"+t.Group())
	}
	return out
}

// TestAddAll: a batch registers as Add would one after the other, in
// order, against the toolkit and the batch's earlier tools (override,
// skip, the default's failure), in one change; a batch with a failure
// registers nothing and names every failed registration, each judged as
// if the failed ones before it were left out.
func TestAddAll(t *testing.T) {
	override := toolkit.OnConflict(toolkit.ConflictOverride)
	skip := toolkit.OnConflict(toolkit.ConflictSkip)
	tests := []struct {
		name   string
		batch  []toolkit.Registration
		want   []string       // the listing after it
		failed map[int]string // index → a piece of its error; nil: no error
	}{
		{name: "empty", want: []string{"x:X.:basic", "y:Y.:basic"}},
		{
			name:  "appended in order, groups kept",
			batch: []toolkit.Registration{reg(described("a", "A.")), reg(described("b", "B."), toolkit.InGroup("g")), reg(described("c", "C."))},
			want:  []string{"x:X.:basic", "y:Y.:basic", "a:A.:basic", "b:B.:g", "c:C.:basic"},
		},
		{
			name:   "taken in the toolkit",
			batch:  []toolkit.Registration{reg(described("a", "A.")), reg(described("x", "X2."))},
			want:   []string{"x:X.:basic", "y:Y.:basic"},
			failed: map[int]string{1: `a tool named "x" is already registered`},
		},
		{
			name:   "taken earlier in the batch",
			batch:  []toolkit.Registration{reg(described("a", "A.")), reg(described("a", "A2."))},
			want:   []string{"x:X.:basic", "y:Y.:basic"},
			failed: map[int]string{1: `a tool named "a" is already registered`},
		},
		{
			name:  "override of the toolkit's, in its place",
			batch: []toolkit.Registration{reg(described("a", "A.")), reg(described("x", "X2."), override)},
			want:  []string{"x:X2.:basic", "y:Y.:basic", "a:A." + ":basic"},
		},
		{
			name:  "override of the batch's, in its place",
			batch: []toolkit.Registration{reg(described("a", "A.")), reg(described("b", "B.")), reg(described("a", "A2."), override, toolkit.InGroup("g"))},
			want:  []string{"x:X.:basic", "y:Y.:basic", "a:A2.:g", "b:B.:basic"},
		},
		{
			name:  "skip keeps the first",
			batch: []toolkit.Registration{reg(described("y", "Y2."), skip), reg(described("a", "A.")), reg(described("a", "A2."), skip)},
			want:  []string{"x:X.:basic", "y:Y.:basic", "a:A.:basic"},
		},
		{
			name: "every failure named, nothing registered",
			batch: []toolkit.Registration{
				reg(described("a", "A."), toolkit.InGroup("nope")),
				reg(described("b", "B.")),
				reg(described("bad name", "B.")),
				reg(described("c", "C."), toolkit.WithIdempotency(99)),
				reg(nil),
			},
			want:   []string{"x:X.:basic", "y:Y.:basic"},
			failed: map[int]string{0: `group "nope" not found`, 2: "invalid tool name", 3: "idempotency level 99", 4: "nil tool"},
		},
		{
			name:   "judged without the failed ones before",
			batch:  []toolkit.Registration{reg(described("a", "A."), toolkit.InGroup("nope")), reg(described("a", "A2."))},
			want:   []string{"x:X.:basic", "y:Y.:basic"},
			failed: map[int]string{0: `group "nope" not found`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
			mustAdd(t, tk, described("x", "X."))
			mustAdd(t, tk, described("y", "Y."))
			var changes atomic.Int32
			tk.OnChange(func() { changes.Add(1) })

			err := tk.AddAll(tc.batch...)
			if got := listing(tk); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
			wantChanges := int32(1)
			if tc.failed != nil || len(tc.batch) == 0 {
				wantChanges = 0
			}
			if n := changes.Load(); n != wantChanges {
				t.Errorf("OnChange ran %d times, want %d", n, wantChanges)
			}
			if tc.failed == nil {
				if err != nil {
					t.Fatalf("AddAll: %v", err)
				}
				return
			}
			var be *toolkit.BatchError
			if !errors.As(err, &be) {
				t.Fatalf("AddAll = %v, want a *BatchError", err)
			}
			if got, want := slices.Sorted(maps.Keys(be.Failed)), slices.Sorted(maps.Keys(tc.failed)); !slices.Equal(got, want) {
				t.Fatalf("failed registrations %v (%v), want %v", got, err, want)
			}
			for i, piece := range tc.failed {
				if !strings.Contains(be.Failed[i].Error(), piece) {
					t.Errorf("registration %d: %v, want it to say %q", i, be.Failed[i], piece)
				}
			}
			// Without the failed ones, the rest registers.
			var rest []toolkit.Registration
			for i, r := range tc.batch {
				if be.Failed[i] == nil {
					rest = append(rest, r)
				}
			}
			if err := tk.AddAll(rest...); err != nil {
				t.Errorf("AddAll of the rest: %v", err)
			}
		})
	}
}

// TestAddAllErrorsIs: a BatchError's registrations' errors are seen
// through it.
func TestAddAllErrorsIs(t *testing.T) {
	tk := newToolkit(t, nil)
	err := tk.AddAll(reg(described("a", "A.")), reg(described("b", "B."), toolkit.InGroup("")))
	if !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("AddAll = %v, want it to wrap ErrInvalidOption", err)
	}
	if !strings.Contains(err.Error(), "registration 1") {
		t.Errorf("AddAll = %q, want it to name registration 1", err)
	}
}

// TestAddAllRename: a rename moves away from the toolkit's names and the
// batch's earlier ones, keeping the original name.
func TestAddAllRename(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, described("x", "X."))
	rename := toolkit.OnConflict(toolkit.ConflictRename)
	if err := tk.AddAll(reg(described("x", "X2."), rename), reg(described("a", "A.")), reg(described("a", "A2."), rename)); err != nil {
		t.Fatal(err)
	}
	tools := tk.Tools()
	if len(tools) != 4 || tools[0].Name != "x" || tools[2].Name != "a" {
		t.Fatalf("tools = %v", listing(tk))
	}
	for _, i := range []int{1, 3} {
		orig := map[int]string{1: "x", 3: "a"}[i]
		if got := tools[i]; !strings.HasPrefix(got.Name, orig+"_") || len(got.Name) != len(orig)+6 || got.OriginalName() != orig {
			t.Errorf("tool %d = %q (original %q), want %s_XXXXX from %q", i, got.Name, got.OriginalName(), orig, orig)
		}
	}
}

// TestAddAllSameAsAdd: a batch leaves the toolkit as the same Adds one
// after the other do, schemas and order included.
func TestAddAllSameAsAdd(t *testing.T) {
	var batch []toolkit.Registration
	for i := range 50 {
		opts := []toolkit.Option{toolkit.OnConflict(toolkit.Conflict(i % 3))} // error, override, skip
		if i%4 == 0 {
			opts = append(opts, toolkit.InGroup("g"), toolkit.ReadOnly())
		}
		name := fmt.Sprintf("t%d", i%20) // names come back: overrides and skips
		schema := objectSchema(map[string]any{fmt.Sprintf("p%d", i): map[string]any{"type": "string"}})
		batch = append(batch, reg(toolkit.Raw(name, fmt.Sprintf("Tool %d.", i), schema, nopHandler), opts...))
	}
	one := newToolkit(t, nil)
	all := newToolkit(t, nil)
	var failed []int
	for _, tk := range []*toolkit.Toolkit{one, all} {
		mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
	}
	for i, r := range batch {
		if err := one.Add(r.Tool, r.Options...); err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no registration failed: the batch tests nothing of the default conflict")
	}
	err := all.AddAll(batch...)
	var be *toolkit.BatchError
	if !errors.As(err, &be) || !slices.Equal(slices.Sorted(maps.Keys(be.Failed)), failed) {
		t.Fatalf("AddAll = %v, want the registrations Add refused: %v", err, failed)
	}
	var rest []toolkit.Registration
	for i, r := range batch {
		if !slices.Contains(failed, i) {
			rest = append(rest, r)
		}
	}
	if err := all.AddAll(rest...); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "schemas", all.Schemas([]string{"g"}), one.Schemas([]string{"g"}))
	if got, want := listing(all), listing(one); !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
}

// TestAddAllAtomic: readers see a batch whole or not at all.
func TestAddAllAtomic(t *testing.T) {
	tk := newToolkit(t, nil)
	var batch []toolkit.Registration
	for i := range 200 {
		batch = append(batch, reg(described(fmt.Sprintf("t%d", i), "T.")))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := len(tk.Tools()); n != 0 && n != len(batch) {
				t.Errorf("a reader saw %d tools of a batch of %d", n, len(batch))
				return
			}
		}
	})
	if err := tk.AddAll(batch...); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if n := len(tk.Tools()); n != len(batch) {
		t.Errorf("%d tools after the batch, want %d", n, len(batch))
	}
}
