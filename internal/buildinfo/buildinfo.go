// Package buildinfo names the version a toolbus binary was built from.
package buildinfo

import "runtime/debug"

// Version is the main module's version, with the first 12 characters of
// the VCS revision when the build recorded one; "" when the binary has no
// build information.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}
