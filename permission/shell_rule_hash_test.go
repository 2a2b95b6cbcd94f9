package permission

import "testing"

// TestDenyRuleSeesHashedNames: bash's hash -p PATH NAME makes NAME run
// PATH ("hash -p /bin/rm r; r x" runs rm), as an alias does: the
// hashed program is what the line runs.
func TestDenyRuleSeesHashedNames(t *testing.T) {
	denyRulesSee(t, []string{
		"hash -p /bin/rm r; r -rf x",
		"hash -p/bin/rm r; r -rf x",
		"hash -lp /bin/rm r",
		"hash -p rm r",
	}, nil, []string{
		"hash",
		"hash -r",
		"hash ls",
		"hash -p /bin/ls l; l",
	})
}
