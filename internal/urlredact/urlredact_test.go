package urlredact_test

import (
	"testing"

	"github.com/toolbus/toolbus/internal/urlredact"
)

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"nats://a:4222", "nats://a:4222"},
		{"nats://alice:pw@a:4222", "nats://alice:***@a:4222"},
		{"nats://tok@a:4222", "nats://***@a:4222"},
		{"alice:pw@a:4222", "alice:***@a:4222"},
		{"a:4222", "a:4222"},
		{"nats://alice:p@w@a:4222", "nats://alice:***@a:4222"}, // an unescaped @ in the password
		{"https://m.example/mcp?api_key=k&v=2&flag", "https://m.example/mcp?api_key=***&v=***&flag"},
		{"https://bob:pw@m.example/a?k=v#frag", "https://bob:***@m.example/a?k=***#frag"},
		{"https://m.example/users/@bob?k=v", "https://***@bob?k=***"}, // an @ in the path hides what is before it
		{"https://m.example/mcp?", "https://m.example/mcp?"},
		{"", ""},
		// A password or token with an unescaped /, ? or # (a URL that does
		// not parse, the very one a validation error names): hidden whole.
		{"nats://alice:p/w@a:4222", "nats://alice:***@a:4222"},
		{"nats://s3cr/et@a:4222", "nats://***@a:4222"},
		{"nats://alice:p?w@a:4222", "nats://alice:***@a:4222"},
		{"nats://alice:p#w@a:4222", "nats://alice:***@a:4222"},
		{"nats://to#k?en@a:4222", "nats://***@a:4222"},
	} {
		if got := urlredact.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestList(t *testing.T) {
	if got, want := urlredact.List("nats://a:pw@h1:1,nats://tok@h2:2,h3:3"), "nats://a:***@h1:1,nats://***@h2:2,h3:3"; got != want {
		t.Errorf("List = %q, want %q", got, want)
	}
}
