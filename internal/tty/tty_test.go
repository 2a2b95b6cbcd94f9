package tty

import (
	"os"
	"testing"
)

func TestDevNullIsNoTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if Is(null) {
		t.Fatal("/dev/null taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Is(f) || Is(nil) {
		t.Fatal("a regular file (or none) taken for a terminal")
	}
}
