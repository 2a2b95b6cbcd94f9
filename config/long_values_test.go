package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// An error quotes the start of a long value and says its length, rather
// than the value whole: a value of 1 MB made an error of 1 MB, in which
// the reason and what to do were lost.
func TestErrorsQuoteLongValuesCut(t *testing.T) {
	long := strings.Repeat("é", 50000) // 100000 bytes: cut on a character
	yaml := "log_format: " + long + "\n" +
		"grace_period: " + long + "\n" +
		"groups:\n  - {name: " + long + ", description: d}\n" +
		"\"" + strings.Repeat("k", 1000) + "\": 1\n" + // a key is 1024 characters at most
		"state: {groups: " + long + "}\n" +
		"permissions:\n  allow: [\"" + strings.Repeat("(", 100000) + "\"]\n"
	_, err := config.Parse("w.yaml", []byte(yaml))
	var es config.Errors
	if !errors.As(err, &es) || len(es) != 6 {
		t.Fatalf("err = %.2000v, want 6 errors", err)
	}
	for _, e := range es {
		if s := e.Error(); len(s)-len(e.Path) > 400 || !strings.Contains(e.Reason, " bytes)") {
			t.Errorf("error of %d bytes, want the value cut: %.300s", len(s), s)
		}
	}
	if want := `w.yaml:1: log_format: invalid value "` + strings.Repeat("é", 32) + `"… (100000 bytes): want one of text, json`; es[0].Error() != want {
		t.Errorf("error %q, want %q", es[0], want)
	}
}
