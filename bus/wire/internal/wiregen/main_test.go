package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const wireDir = "../.."

var toolkitDir = filepath.Join(wireDir, "..", "..", "toolkit")

// TestGeneratedCodeIsFresh fails when bus/wire/wire_gen.go is not what
// the generator writes from the message structs now: run go generate
// ./bus/wire.
func TestGeneratedCodeIsFresh(t *testing.T) {
	want, err := generate(wireDir, toolkitDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(wireDir, genFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go generate ./bus/wire`", genFile)
	}
}

// TestStaleCodeIsDetected: a field added to a message changes the
// generated code, so the freshness test above catches a struct edited
// without regenerating.
func TestStaleCodeIsDetected(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(wireDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "messages.go" {
			edited := strings.Replace(string(src), "\tSession string `json:\"session,omitempty\" msgpack:\"session,omitempty\"`\n}",
				"\tSession string `json:\"session,omitempty\" msgpack:\"session,omitempty\"`\n\tAttempt uint64 `json:\"attempt,omitempty\" msgpack:\"attempt,omitempty\"`\n}", 1)
			if edited == string(src) {
				t.Fatal("the Request struct was not found to edit")
			}
			src = []byte(edited)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edited, err := generate(dir, toolkitDir)
	if err != nil {
		t.Fatal(err)
	}
	current, err := os.ReadFile(filepath.Join(wireDir, genFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(edited, current) {
		t.Fatal("adding a field to Request left the generated code unchanged")
	}
	if !bytes.Contains(edited, []byte(`case "attempt":`)) {
		t.Fatal("the generated decoder does not read the new field")
	}
}

// TestRejectsUnsupportedFields: a field the codec cannot handle fails
// generation with its name, instead of being skipped.
func TestRejectsUnsupportedFields(t *testing.T) {
	dir := t.TempDir()
	src := "package wire\n\n// X is a message.\n//\n//wire:message\ntype X struct {\n\tC chan int `msgpack:\"c\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := generate(dir, toolkitDir)
	if err == nil || !strings.Contains(err.Error(), "X.C") {
		t.Fatalf("err = %v, want one naming X.C", err)
	}
}
