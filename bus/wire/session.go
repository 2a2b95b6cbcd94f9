package wire

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/toolbus/toolbus/toolkit"
)

// ErrInvalidSession is returned (wrapped) for a session name that cannot
// be a KV key: its encoded key is longer than MaxSessionKeyLen, or a key
// that no session encodes to. It is the toolkit's, so a call of such a
// session ends invalid_input.
var ErrInvalidSession = toolkit.ErrInvalidSession

var sessionKeyB64 = base64.RawURLEncoding

// KeyToken encodes s as one KV key token: s itself when it is made only
// of [A-Za-z0-9_-] (and not empty), otherwise "=" followed by the unpadded
// base64url encoding (RFC 4648 §5) of its bytes. "=" cannot occur in a
// plain token, so the mapping is reversible and no two strings share a
// token.
func KeyToken(s string) string {
	if toolkit.ValidName(s) {
		return s
	}
	return "=" + sessionKeyB64.EncodeToString([]byte(s))
}

// ScopedKeyToken is the KV key token of a session scope
// (toolkit.SessionScope): KeyToken(session) for an anonymous session, and
// identity + "." + KeyToken(session) for a caller's, so that NATS
// permissions on the keys can give a caller its own sessions only.
func ScopedKeyToken(scope string) string {
	identity, session := toolkit.SplitScope(scope)
	if identity == "" {
		return KeyToken(session)
	}
	return identity + "." + KeyToken(session)
}

// SessionKey returns the KV key of a session scope (ScopedKeyToken). It
// fails with ErrInvalidSession when the key would be longer than
// MaxSessionKeyLen.
func SessionKey(session string) (string, error) {
	key := ScopedKeyToken(session)
	if len(key) > MaxSessionKeyLen {
		return "", fmt.Errorf("%w: a session of %d bytes encodes to a %d-byte KV key, over the %d-byte limit",
			ErrInvalidSession, len(session), len(key), MaxSessionKeyLen)
	}
	return key, nil
}

// ParseSessionKey is the inverse of SessionKey: the session scope.
func ParseSessionKey(key string) (string, error) {
	if identity, rest, ok := strings.Cut(key, "."); ok {
		if !ValidIdentity(identity) {
			return "", fmt.Errorf("%w: key %q is not a session key", ErrInvalidSession, key)
		}
		session, err := ParseSessionKey(rest)
		if err != nil || strings.Contains(rest, ".") {
			return "", fmt.Errorf("%w: key %q is not a session key", ErrInvalidSession, key)
		}
		return toolkit.SessionScope(identity, session), nil
	}
	if enc, ok := strings.CutPrefix(key, "="); ok {
		b, err := sessionKeyB64.DecodeString(enc)
		if err != nil {
			return "", fmt.Errorf("%w: key %q: %v", ErrInvalidSession, key, err)
		}
		return string(b), nil
	}
	if !toolkit.ValidName(key) {
		return "", fmt.Errorf("%w: key %q is not a session key", ErrInvalidSession, key)
	}
	return key, nil
}
