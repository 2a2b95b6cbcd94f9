package permission

import "testing"

// TestDenyRuleSeesGoExec: go test -exec PROG and the build flag
// -toolexec PROG run PROG (with its words split as the go command splits
// them), so "go test -exec 'rm -rf x' ./..." ran rm while a deny or ask
// rule on rm did not match; the value is now read as a command the line
// runs, as strace -o '|cmd' is, whether given on the line or in GOFLAGS.
func TestDenyRuleSeesGoExec(t *testing.T) {
	denyRulesSee(t, []string{
		"go test -exec 'rm -rf x' ./...",
		"go test -exec='rm -rf x' ./...",
		"go test --exec 'rm -rf x' ./...",
		"go test ./... -exec=rm",
		"go build -toolexec 'rm -rf x' ./...",
		"go vet --toolexec=rm ./...",
		"go run -exec rm .",
		"GOFLAGS=-toolexec=rm go build ./...",
		"env GOFLAGS=-exec=rm go test ./...",
	}, []string{
		"go test -exec 'git push' ./...",
	}, []string{
		"go test ./...",
		"go test -run TestX -count=1 ./permission/...",
		"go test -exec echo ./...",
	})
}
