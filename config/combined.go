package config

import (
	"cmp"
	"crypto/tls"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/urlredact"
)

// Combined says, for a connection to url that failed, which server URL
// and which TLS settings of n were dialled together and where each came
// from, when some came from the config file (file; "" when there is
// none) and some from flags, variables or defaults: a flag or variable
// replaces only its own setting of the file (NATS_URL the file's urls,
// not its tls), so a URL meant for one server may meet the TLS settings
// of another. It is "" otherwise, and when no TLS is set.
//
// sources are ConnFlags.Apply's. listenKey is the key of the file url
// came from when neither n.URLs nor a flag or variable gave it (toolctl
// dials a worker's embedded.listen, or the listen of its
// embedded.server_config), or "" when url is the default. The text is a
// sentence to print after the error, with the URL redacted.
func Combined(n NATS, file string, sources map[string]string, url, listenKey string) string {
	urlFrom, urlInFile := urlSource(n, file, sources, listenKey)
	parts := []string{urlredact.List(url) + " from " + urlFrom}
	mixed := false
	for _, s := range tlsSettings(n, file, sources) {
		parts = append(parts, s.said)
		mixed = mixed || s.inFile != urlInFile
	}
	if !mixed {
		return ""
	}
	return "these settings were combined: " + strings.Join(parts, "; ") +
		". A flag or variable replaces only its own setting of the --config file (--nats and NATS_URL its urls, not its tls): give the server's TLS settings with its URL (--tls-ca, NATS_CA, ...), or leave out --config"
}

// URLFrom says where the server URL dialled came from, as Combined
// says it: "flag --nats", "env NATS_URL", "--config FILE", "--config FILE
// (its embedded.listen)" or "the default". n, file, sources and
// listenKey are as for Combined.
func URLFrom(n NATS, file string, sources map[string]string, listenKey string) string {
	from, _ := urlSource(n, file, sources, listenKey)
	return from
}

// urlSource says where the server URL dialled came from, as Combined
// takes it, and whether that is the config file.
func urlSource(n NATS, file string, sources map[string]string, listenKey string) (string, bool) {
	switch {
	case sources["nats.urls"] != "" || n.URL() != "":
		return settingFrom(file, sources, "nats.urls")
	case listenKey != "" && file != "":
		return "--config " + file + " (its " + listenKey + ")", true
	default:
		return "the default", false
	}
}

// SystemRoots says, for a connection to url whose TLS handshake failed
// to verify the server's certificate, that no TLS CA is set, so the
// certificate was checked against the system's roots, why TLS was used
// (tlsAsked's; with no TLS settings and a nats:// URL, because the server
// requires it: nats.go then upgrades by itself) and where url came from.
// url is one server's URL: n's URLs, or the one dialled when n has none.
// It is "" when a CA is set. file, sources and listenKey are as for
// Combined.
func SystemRoots(n NATS, file string, sources map[string]string, url, listenKey string) string {
	if n.TLS.CA != "" {
		return ""
	}
	from, _ := urlSource(n, file, sources, listenKey)
	why := cmp.Or(tlsAsked(n, file, sources, url), "the server requires TLS")
	return why + " (" + urlredact.List(url) + " from " + from + ") and no TLS CA is set (--tls-ca, NATS_CA or nats.tls.ca), " +
		"so the server's certificate was checked against the system's roots: give the CA that signed it"
}

// ConnNote says what likely caused err, the failure of a connection to
// the server at url (as for SystemRoots): a server that offers no TLS
// when TLS was asked of it (which settings, or which URL, asked, and
// where each came from), or SystemRoots's text for a certificate not
// verified with no CA set. It is "" for any other error.
func ConnNote(n NATS, file string, sources map[string]string, url, listenKey string, err error) string {
	switch {
	case errors.Is(err, nats.ErrSecureConnWanted):
		return cmp.Or(tlsAsked(n, file, sources, url), "TLS is set") + ", and the server does not offer TLS"
	case errors.Is(err, nats.ErrTLS) && errors.As(err, new(*tls.CertificateVerificationError)):
		return SystemRoots(n, file, sources, url, listenKey)
	}
	return ""
}

// tlsAsked says why the client asked the server at url for TLS: its TLS
// settings (which, and where from), url's scheme, or the scheme of
// another URL of n's, as nats.go asks every server of a list for TLS
// when one URL does. It is "" when nothing did (a server that requires
// TLS then gets it from nats.go by itself).
func tlsAsked(n NATS, file string, sources map[string]string, url string) string {
	if set := TLSFrom(n, file, sources); set != "" {
		return "TLS is set (" + set + ")"
	}
	if asksTLS(url) {
		return "the URL asks for TLS"
	}
	for _, u := range n.URLs {
		if asksTLS(u) {
			return "another URL of the list asks for TLS (" + urlredact.URL(u) + "), which nats.go then asks of every server of it"
		}
	}
	return ""
}

// TLSFrom says the TLS settings of n that are set and where each came
// from, as Combined does ("nats.tls.ca ca.pem from --config worker.yaml;
// nats.tls.cert ... from env NATS_CERT"), or "" when none is. file and
// sources are as for Combined.
func TLSFrom(n NATS, file string, sources map[string]string) string {
	var parts []string
	for _, s := range tlsSettings(n, file, sources) {
		parts = append(parts, s.said)
	}
	return strings.Join(parts, "; ")
}

// tlsSetting is a TLS setting that is set, said with where it came
// from, and whether that is the config file.
type tlsSetting struct {
	said   string
	inFile bool
}

func tlsSettings(n NATS, file string, sources map[string]string) []tlsSetting {
	var out []tlsSetting
	for _, s := range []struct{ key, value string }{
		{"nats.tls.ca", n.TLS.CA},
		{"nats.tls.cert", n.TLS.Cert},
		{"nats.tls.key", n.TLS.Key},
	} {
		if s.value == "" {
			continue
		}
		src, inFile := settingFrom(file, sources, s.key)
		out = append(out, tlsSetting{s.key + " " + s.value + " from " + src, inFile})
	}
	return out
}

// settingFrom says where the setting at key came from, and whether that
// is the config file.
func settingFrom(file string, sources map[string]string, key string) (string, bool) {
	if src, ok := sources[key]; ok {
		return src, false
	}
	if file != "" {
		return "--config " + file, true
	}
	return "the default", false
}
