//go:build !unix

package serverconf_test

import "errors"

func mkfifo(string) error { return errors.New("not on this system") }
