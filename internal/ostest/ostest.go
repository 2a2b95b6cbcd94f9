// Package ostest holds what tests need of the operating system that
// differs between systems: named pipes, signals, socket options. On Unix
// each is the system call; on Windows, where there is none, a test that
// needs a named pipe is skipped and the rest fail with an error saying
// so, so that the tests of every package build (and vet) everywhere.
package ostest
