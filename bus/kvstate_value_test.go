package bus

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKVStateValueNamesItsKey: Store writes {"key":<key>,"groups":[...]}.
// A value is read as a session's groups only when it is bound to the
// session's key: one naming another key (a copy stored over it) is
// refused; a bare array, as earlier versions wrote, is read when a
// compare-and-set stored it and refused without that header (put by
// hand, or a copy a direct get asked with no_hdr stored under the key).
// Both read paths agree: the direct get, and the stream leader's answer
// that a read at a later revision of another key gets.
func TestKVStateValueNamesItsKey(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	js := natstest.JS(t, nc)
	st := newTestKVState(t, js, nil)
	ctx := natstest.Ctx(t)
	b, err := js.KeyValue(ctx, st.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	alice := toolkit.SessionScope("alice", "mine")
	if _, err := st.Store(ctx, alice, []string{"vault"}); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, js, st.Bucket(), "alice.mine")
	if err != nil || string(e.Value) != `{"key":"alice.mine","groups":["vault"]}` {
		t.Fatalf("the stored value: %s, %v", e.Value, err)
	}

	// copy has a direct get of from, asked with no_hdr, answered to the
	// key to: the stored value alone lands there.
	copyTo := func(from, to string) {
		t.Helper()
		before, _ := kv.Get(ctx, js, st.Bucket(), to)
		get := "$JS.API.DIRECT.GET.KV_" + st.Bucket() + ".$KV." + st.Bucket() + "." + from
		if err := nc.PublishRequest(get, "$KV."+st.Bucket()+"."+to, []byte(`{"no_hdr":true}`)); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, "the copy of "+from+" under "+to, func() bool {
			e, err := kv.Get(ctx, js, st.Bucket(), to)
			return err == nil && e.Revision > before.Revision
		})
	}
	tests := []struct {
		name  string
		write func(key string)
		want  []string // nil: refused
	}{
		{"stored by KVState", func(key string) {
			scope, _ := wire.ParseSessionKey(key)
			if _, err := st.Store(ctx, scope, []string{"web"}); err != nil {
				t.Fatal(err)
			}
		}, []string{"web"}},
		{"a bare array created", func(key string) {
			if _, err := b.Create(ctx, key, []byte(`["web"]`)); err != nil {
				t.Fatal(err)
			}
		}, []string{"web"}},
		{"a bare array updated", func(key string) {
			rev, err := b.Create(ctx, key, []byte(`[]`))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Update(ctx, key, []byte(` ["web"]`), rev); err != nil {
				t.Fatal(err)
			}
		}, []string{"web"}},
		{"a bare array put", func(key string) {
			if _, err := b.Put(ctx, key, []byte(`["web"]`)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"another key's value", func(key string) {
			if _, err := b.Create(ctx, key, []byte(`{"key":"bob.other","groups":["web"]}`)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"no groups", func(key string) {
			if _, err := b.Create(ctx, key, []byte(`{"key":"`+key+`"}`)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"a copy of alice's groups without headers", func(key string) { copyTo("alice.mine", key) }, nil},
		{"a headerless copy of a bare array created", func(key string) {
			if _, err := b.Create(ctx, "alice.legacy", []byte(`["vault"]`)); err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatal(err)
			}
			copyTo("alice.legacy", key)
		}, nil},
	}
	for i, tt := range tests {
		for _, leader := range []bool{false, true} {
			key := "bob.s" + string(rune('a'+i))
			if leader {
				key += "-leader"
			}
			scope, err := wire.ParseSessionKey(key)
			if err != nil {
				t.Fatal(err)
			}
			tt.write(key)
			var minRev uint64
			if leader {
				// A later revision of another key: the direct get's
				// answer is older, so the stream leader is asked.
				if minRev, err = st.Store(ctx, "later", nil); err != nil {
					t.Fatal(err)
				}
			}
			got, _, ok, err := st.Load(ctx, scope, minRev)
			switch {
			case tt.want == nil && (err == nil || !strings.Contains(err.Error(), "bad value") || !strings.Contains(err.Error(), key)):
				t.Errorf("%s (leader %v): Load = %v, %v, %v; want a 'bad value' error naming %s", tt.name, leader, got, ok, err, key)
			case tt.want != nil && (err != nil || !ok || !slices.Equal(got, tt.want)):
				t.Errorf("%s (leader %v): Load = %v, %v, %v; want %v", tt.name, leader, got, ok, err, tt.want)
			}
			// A refused value is replaced by the next Store.
			rev, err := st.Store(ctx, scope, []string{"files"})
			if err != nil {
				t.Fatalf("%s: Store over it: %v", tt.name, err)
			}
			if got, _, ok, err := st.Load(ctx, scope, rev); err != nil || !ok || !slices.Equal(got, []string{"files"}) {
				t.Errorf("%s: Load after Store = %v, %v, %v", tt.name, got, ok, err)
			}
		}
	}
}

// TestDecodeGroups: the value's shapes, without a server.
func TestDecodeGroups(t *testing.T) {
	cas := map[string][]string{"Nats-Expected-Last-Subject-Sequence": {"3"}}
	tests := []struct {
		val  string
		cas  bool
		want []string // nil: refused
	}{
		{`{"key":"k","groups":["a","b"]}`, false, []string{"a", "b"}},
		{`{"key":"k","groups":[]}`, true, []string{}},
		{`{"groups":["a"],"key":"k","later":1}`, false, []string{"a"}},
		{`{"key":"other","groups":["a"]}`, true, nil},
		{`{"groups":["a"]}`, true, nil},
		{`{"key":"k"}`, true, nil},
		{`{"key":"k","groups":null}`, true, nil},
		{`{"key":"k","groups":[1]}`, true, nil},
		{`["a"]`, true, []string{"a"}},
		{"\n[]", true, []string{}},
		{`["a"]`, false, nil},
		{`[1]`, true, nil},
		{`null`, true, nil},
		{``, true, nil},
		{`web`, true, nil},
	}
	for _, tt := range tests {
		var h map[string][]string
		if tt.cas {
			h = cas
		}
		got, err := decodeGroups("k", []byte(tt.val), h)
		if tt.want == nil && err == nil || tt.want != nil && (err != nil || !slices.Equal(got, tt.want) || got == nil) {
			t.Errorf("decodeGroups(%q, CAS %v) = %#v, %v; want %#v", tt.val, tt.cas, got, err, tt.want)
		}
	}
	if b, _ := json.Marshal(storedGroups{Key: "k", Groups: []string{}}); string(b) != `{"key":"k","groups":[]}` {
		t.Errorf("an empty state is stored as %s", b)
	}
}
