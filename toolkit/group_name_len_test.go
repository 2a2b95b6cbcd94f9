package toolkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A group's name had no bound: AddGroup took a name of 10 MiB, which no
// NATS subject, KV entry or announcement of the bus holds, and a tool
// naming it in InGroup failed with an error quoting it whole. A group
// name is now bounded as a tool's is (toolkit.MaxNameLen), refused at
// AddGroup and InGroup with an error that quotes its start only.
func TestGroupNameBounded(t *testing.T) {
	tk := newToolkit(t, nil)
	long := strings.Repeat("g", 10<<20)
	err := tk.AddGroup(toolkit.Group{Name: long, Description: "G."})
	if err == nil {
		t.Fatal("AddGroup took a group name of 10 MiB")
	}
	if len(err.Error()) > 1024 || !strings.Contains(err.Error(), "255") {
		t.Errorf("AddGroup's error (%d bytes) %.300q, want a short one naming the bound", len(err.Error()), err)
	}
	if len(tk.Groups()) != 0 {
		t.Errorf("groups %d after a refused AddGroup", len(tk.Groups()))
	}
	mustAddGroup(t, tk, toolkit.Group{Name: strings.Repeat("g", toolkit.MaxNameLen), Description: "At the bound."})
	if err := tk.AddGroup(toolkit.Group{Name: strings.Repeat("g", toolkit.MaxNameLen+1), Description: "Past it."}); err == nil {
		t.Errorf("AddGroup took a group name of %d bytes", toolkit.MaxNameLen+1)
	}

	err = tk.Add(toolkit.Raw("t", "T.", nil, nopHandler), toolkit.InGroup(long))
	if err == nil || !errors.Is(err, toolkit.ErrInvalidOption) || len(err.Error()) > 1024 {
		t.Errorf("InGroup of a 10 MiB name: error %.300v, want a short ErrInvalidOption", err)
	}
}
