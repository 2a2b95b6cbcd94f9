package permission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

func TestSamePolicy(t *testing.T) {
	a := &Announced{Mode: "default", Allow: []string{"echo", "view_text_file"}, Deny: []string{"execute_shell_command"}}
	reordered := &Announced{Mode: "default", Allow: []string{"view_text_file", "echo", "echo"}, Deny: []string{"execute_shell_command"}}
	for _, tt := range []struct {
		a, b *Announced
		same bool
	}{
		{nil, nil, true},
		{a, reordered, true},
		{a, nil, false},
		{nil, a, false},
		{a, &Announced{Mode: "bypass", Allow: a.Allow, Deny: a.Deny}, false},
		{a, &Announced{Mode: "default", Allow: a.Allow}, false},
		{a, &Announced{Mode: "default", Allow: a.Allow, Deny: a.Deny, Ask: []string{"echo"}}, false},
	} {
		if got := Same(tt.a, tt.b); got != tt.same {
			t.Errorf("Same(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}

// TestCheckFleet: a worker compares its policy with the announcements of
// its queue group's live workers, not with other queue groups' or its own.
func TestCheckFleet(t *testing.T) {
	s := startNATS(t, t.TempDir())
	nc, _ := connect(t, s)
	strict := Announced{Mode: "default", Deny: []string{"execute_shell_command"}}
	announce := func(instance, queue string, p *Announced) {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })); err != nil {
			t.Fatal(err)
		}
		o := &discovery.AnnouncerOptions{Instance: instance, Queue: queue}
		if p != nil {
			o.Meta = map[string]func() any{wire.MetaPermissions: Announce(*p)}
		}
		a, err := discovery.NewAnnouncer(nc, tk, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Stop() })
	}
	announce("strict-1", "toolbus", &strict)
	announce("open-1", "other", nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := discovery.NewFleet(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Instances()) != 2 {
		t.Fatalf("instances %+v", f.Instances())
	}
	if err := CheckFleet(f, "new", "toolbus", []string{"echo"}, &Announced{Mode: "default", Deny: []string{"execute_shell_command"}}); err != nil {
		t.Errorf("the same policy: %v", err)
	}
	if err := CheckFleet(f, "new", "other", []string{"echo"}, nil); err != nil {
		t.Errorf("no checks in a group without checks: %v", err)
	}
	err = CheckFleet(f, "new", "toolbus", []string{"other_tool", "echo"}, nil)
	if !errors.Is(err, ErrFleetPolicy) {
		t.Fatalf("a worker without checks joining a checking group: %v", err)
	}
	t.Log(err)
	if err := CheckFleet(f, "new", "toolbus", []string{"echo"}, &Announced{Mode: "bypass"}); !errors.Is(err, ErrFleetPolicy) {
		t.Errorf("another mode: %v", err)
	}
	if err := CheckFleet(f, "new", "toolbus", []string{"other_tool"}, nil); err != nil {
		t.Errorf("no tool in common: %v", err)
	}
	if err := CheckFleet(f, "strict-1", "toolbus", []string{"echo"}, nil); err != nil {
		t.Errorf("a worker is compared with itself: %v", err)
	}
}
