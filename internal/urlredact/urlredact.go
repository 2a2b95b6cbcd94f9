// Package urlredact hides the secrets a configured URL may carry, for
// errors and logs that name the URL: the password of its user info (or
// the user info itself when it is one word, a NATS token), and the value
// of every query parameter (hosted MCP servers take API keys there). The
// rest of the URL stays, so the reader still sees which URL is meant.
//
//	urlredact.URL("nats://alice:pw@a:4222")           // nats://alice:***@a:4222
//	urlredact.URL("nats://token@a:4222")              // nats://***@a:4222
//	urlredact.URL("https://m.example/mcp?api_key=k")  // https://m.example/mcp?api_key=***
//
// It works on the text, not on a parsed URL, so that a URL that does not
// parse (the very one a validation error names) is redacted too.
package urlredact

import "strings"

// List is URLs, comma-separated (a NATS server list), each redacted by
// URL.
func List(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		parts[i] = URL(u)
	}
	return strings.Join(parts, ",")
}

// Hidden replaces a secret.
const Hidden = "***"

// URL is raw with its secrets replaced by Hidden. A URL without a scheme
// (host:port, user:password@host:port) is read as if it had one.
//
// The user info runs to the last "@" of the URL: a password or token
// may hold an unescaped "/", "?" or "#" (a URL that then does not parse,
// the very one a validation error names), which would otherwise end the
// host part early and show the secret whole. An "@" in a path or query
// hides what comes before it as well: safe rather than readable.
func URL(raw string) string {
	var scheme string
	rest := raw
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if user, _, ok := strings.Cut(rest[:at], ":"); ok && !strings.ContainsAny(user, "/?#") {
			scheme += user + ":" + Hidden + "@"
		} else {
			scheme += Hidden + "@"
		}
		rest = rest[at+1:]
	}
	var frag string
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag = rest[:i], rest[i:]
	}
	out := rest
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		params := strings.Split(rest[i+1:], "&")
		for j, p := range params {
			if k, v, ok := strings.Cut(p, "="); ok && v != "" {
				params[j] = k + "=" + Hidden
			}
		}
		out = rest[:i] + "?" + strings.Join(params, "&")
	}
	return scheme + out + frag
}
