package permission

import "testing"

// TestCmakeCommandRunsProgram: cmake -E env, time and chdir run the
// command after their own arguments, but cmake's words were not read for
// one, so "cmake:*" allowed "cmake -E env FOO=1 rm -rf x" and rm ran with
// "rm:*" denied. That command is now one the line runs, as env's is.
func TestCmakeCommandRunsProgram(t *testing.T) {
	denyRulesSee(t, []string{
		"cmake -E env rm -rf x",
		"cmake -E env FOO=1 --unset=BAR rm -rf x",
		"cmake -E env --modify PATH=path_list_prepend:/x -- rm -rf x",
		"cmake -E time rm -rf x",
		"cmake -E chdir build rm -rf x",
		"cmake -E chdir build sh -c 'rm -rf x'",
	}, nil, []string{"cmake -E env FOO=1 ctest", "cmake -E chdir build make", "cmake -E rm -rf build"})
}
