package permission

import "testing"

// TestBuildToolOutputs: zip writes its archive (and with -m removes the
// files it adds), cmake its build directory (-B, --build, or the
// current one) and install prefix, protoc the directories of its
// --LANG_out options, tsc --outDir, --outFile and the .js beside each
// source it is given, javac -d's directory (or the .class beside each
// source), pip install's --target, --prefix and --root (download's and
// wheel's directories), cargo its --target-dir and install --root; none
// was a file written, so "zip:*" allowed "zip -r /srv/other/a.zip src"
// (and the others theirs), writes outside the working directories that
// a redirection there asks for; they now ask the same. Inside they stay
// the command's.
func TestBuildToolOutputs(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "zip", "cmake", "protoc", "tsc", "javac", "pip", "pip3", "cargo", "cd", "npx")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"zip -r " + other + "/a.zip src",
			"zip -q -r " + other + "/a src",
			"zip -m a.zip " + other + "/data.db",
			"zip -rm a.zip " + other,
			"zip --move a.zip " + other + "/x",
			"zip -r a.zip src -O " + other + "/b.zip",
			"cmake -B " + other + " -S .",
			"cmake -B" + other,
			"cmake --install-prefix " + other + " -B build",
			"cmake --install-prefix=" + other + " -B build",
			"cmake -DCMAKE_INSTALL_PREFIX=" + other + " -B build",
			"cmake -D CMAKE_INSTALL_PREFIX=" + other + " -B build",
			"cmake -B build -D CMAKE_INSTALL_PREFIX:PATH=" + other,
			"cmake --build " + other,
			"cmake --install build --prefix " + other,
			"cd " + other + " && cmake ..",
			"protoc --go_out=" + other + " api.proto",
			"protoc --go_out=paths=source_relative:" + other + " api.proto",
			"protoc --cpp_out " + other + " api.proto",
			"protoc -o" + other + "/api.pb api.proto",
			"protoc --descriptor_set_out=" + other + "/api.pb api.proto",
			"tsc --outDir " + other,
			"tsc --outDir=" + other + " -p .",
			"tsc --outFile " + other + "/app.js src/app.ts",
			"tsc --declarationDir " + other,
			"tsc " + other + "/x.ts",
			"npx tsc --outDir " + other,
			"javac -d " + other + " src/Main.java",
			"javac " + other + "/Main.java",
			"javac -h " + other + " -d build src/Main.java",
			"pip install --target " + other + " requests",
			"pip install -t " + other + " requests",
			"pip install --target=" + other + " requests",
			"pip install --prefix " + other + " requests",
			"pip3 install --root " + other + " requests",
			"pip download -d " + other + " requests",
			"pip wheel -w " + other + " .",
			"cargo build --target-dir " + other,
			"cargo test --target-dir=" + other,
			"cargo install --root " + other + " ripgrep",
			"cargo build --config 'build.target-dir=\"" + other + "\"'",
			"cargo --config=\"build.target-dir = '" + other + "'\" build",
		} {
			d := Decide(p, shell, cmd(line))
			if d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
			if len(d.Suggested) > 0 {
				t.Errorf("%v %q: suggested %v, want none", dirs, line, d.Suggested)
			}
		}
		for _, line := range []string{
			"zip -r dist.zip dist",
			"zip -r a.zip . -x '*.git*'",
			"zip a.zip " + other + "/x",
			"zip -q a.zip -@",
			"cmake -S . -B build",
			"cmake ..",
			"cmake --build build",
			"cmake --install build --prefix dist",
			"cmake -B build -DCMAKE_BUILD_TYPE=Release",
			"cmake -B build -D CMAKE_BUILD_TYPE=Release -D CMAKE_INSTALL_PREFIX=dist",
			"protoc --go_out=. api.proto",
			"protoc -I " + other + "/include --go_out=gen api.proto",
			"tsc --noEmit",
			"tsc -p . --outDir dist",
			"tsc --noEmit " + other + "/x.ts",
			"javac -d build src/Main.java",
			"javac -cp " + other + "/lib.jar -d build src/Main.java",
			"pip install requests",
			"pip install -r requirements.txt",
			"pip install -t vendor requests",
			"cargo build --release",
			"cargo build --target-dir target",
			"cargo build --config 'build.target-dir=\"target2\"' --config profile.release.debug=true",
			"cargo build --target x86_64-unknown-linux-musl",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
