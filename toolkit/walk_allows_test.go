package toolkit_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// walkParent and walkChild hold each other: walkChild's own MarshalJSON
// (on its pointer) leaves its parent out, so encoding/json writes them.
type walkParent struct {
	Name     string       `json:"name"`
	Children []*walkChild `json:"children"`
	Kids     []walkChild  `json:"kids"`
}

type walkChild struct {
	Name   string
	parent *walkParent
	Parent *walkParent
}

func (c *walkChild) MarshalJSON() ([]byte, error) { return json.Marshal(c.Name) }

// TestValueChunkWritesWhatEncodingJSONWrites: the walk before
// encoding/json refuses none of the values it writes that hold a value
// more than once or are large: a pointer shared a few times, a 5 MB
// list of structs with pointers, unexported fields, a type whose own
// MarshalJSON (on its pointer) leaves out a parent that holds it, time,
// big numbers, json.Number and json.RawMessage; each is written as
// encoding/json writes it.
func TestValueChunkWritesWhatEncodingJSONWrites(t *testing.T) {
	type item struct {
		ID     string          `json:"id"`
		Tags   []string        `json:"tags"`
		Owner  *walkNode       `json:"owner"`
		When   time.Time       `json:"when"`
		Big    *big.Int        `json:"big"`
		Num    json.Number     `json:"num"`
		Raw    json.RawMessage `json:"raw"`
		secret *item
	}
	owner := &walkNode{Name: "owner"}
	large := make([]*item, 20_000)
	for i := range large {
		large[i] = &item{ID: strconv.Itoa(i) + strings.Repeat("x", 200), Tags: []string{"a", "b"}, Owner: owner,
			When: time.Unix(int64(i), 0).UTC(), Big: big.NewInt(int64(i)), Num: "1.5", Raw: json.RawMessage(`{"k":[1,2]}`)}
		large[i].secret = large[i]
	}
	parent := &walkParent{Name: "p"}
	for i := range 3 {
		c := &walkChild{Name: "c" + strconv.Itoa(i), parent: parent, Parent: parent}
		parent.Children = append(parent.Children, c)
		parent.Kids = append(parent.Kids, *c)
	}
	shared := &walkNode{Name: "s"}
	for name, v := range map[string]any{
		"a pointer shared a few times":         []*walkNode{shared, shared, {A: shared, B: shared}},
		"a 5 MB list of structs with pointers": large,
		"a MarshalJSON leaving out its parent": parent,
		"the same in a map[string]any":         map[string]any{"p": parent, "l": large[:10]},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", name, err)
		}
		c, err := toolkit.ValueChunk(v)
		var got bytes.Buffer
		if err != nil || len(c.Content) != 1 || json.Compact(&got, []byte(c.Content[0].Text)) != nil || got.String() != string(want) {
			t.Errorf("%s: ValueChunk: %v, %.80q…; want encoding/json's %.80q…", name, err, c, want)
		}
	}
}
