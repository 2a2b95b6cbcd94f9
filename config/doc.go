// Package config reads a toolbus worker's YAML configuration: its NATS
// connection or embedded server, tool groups, built-in tools, MCP servers,
// skill directories, middleware settings and permission checks.
//
//	cfg, err := config.Load("worker.yaml")
//	if err != nil {
//		// Every problem, one per line: "worker.yaml:12: groups[1].name: duplicate group "exec""
//		fmt.Fprintln(os.Stderr, err)
//		os.Exit(2)
//	}
//	tk := toolkit.New(nil)
//	for _, g := range cfg.ToolkitGroups() {
//		if err := tk.AddGroup(g); err != nil {
//			log.Fatal(err)
//		}
//	}
//	if err := builtin.Register(tk, cfg.BuiltinConfig()); err != nil {
//		log.Fatal(err)
//	}
//
// testdata/example.yaml is a complete, annotated example.
//
// # Strictness
//
// A config is decoded strictly: an unknown key (a null one, "~: x",
// too, which YAML decoders drop without a word), a value of the wrong type
// (a duration must carry its unit: "30s", not 30), a key given twice and a
// second YAML document are errors. Validate checks the values and the
// references between them. Every error names the file, the line, the key
// path and the reason, quoting 64 bytes at most of a longer value, with
// its length (for an unknown key, the keys allowed there, and
// first the nearest of them when it is a likely typo: "did you mean
// queue_group?"), and all of them are reported at once (Errors),
// except after a YAML syntax error or a document that cannot be read as
// one mapping of keys (a key given twice, a null key, a mapping over
// MaxMappingKeys keys, aliases repeating over MaxAliased values, a second
// document), which stops the reading.
//
// YAML anchors and aliases (&name, *name, and merges "<<: *name") may
// share values: a value given through an alias is where the alias puts
// it, so an error about it names the key the alias is under (at the line
// where the value is written), and it counts as given, as a value
// written out does.
//
// # Defaults and overrides
//
// An absent key means its default, and an empty file is the default
// configuration (Default). The defaults are filled in by Parse and Load
// (ApplyDefaults), except those of the built-in tools (builtins, its
// workspace aside) and of skills (skills[].group), which stay unset and
// are package builtin's and the worker's to apply. Flags and environment variables are the command's
// business: it changes the loaded Config and calls Validate again.
//
// # Decisions
//
//   - Relative paths in a file given to Load are relative to the file's
//     directory, so a config and the files next to it move together;
//     Parse, which has no file, leaves them relative to the working
//     directory.
//   - Data lives under DataDir (XDG_DATA_HOME/toolbus or
//     ~/.local/share/toolbus): the JetStream store and the workspace of
//     the file tools. The workspace is never the working directory by
//     default, so a worker started in a repository cannot edit it unless
//     told to.
//   - The NATS credential and TLS files must exist when the config is
//     validated; skill directories need not (a worker never fails to start
//     over a skill, it warns).
//   - More than one way to authenticate to NATS is an error rather than a
//     precedence rule.
//   - Names in middleware.timeouts and rate_limits are not checked against
//     the tools: MCP tools are only known once their servers answer.
//   - Permission checks are on only when the config has a permissions
//     section (even an empty one, "permissions: {}", which means mode
//     default): a worker started with no configuration runs every call, as
//     before. Its rules are written TOOL or TOOL:PATTERN under allow, deny
//     and ask, the form toolctl allow takes and suggestions are shown in;
//     Permissions.Rules returns them deny first. working_dirs defaults to
//     the workspace of the file tools.
package config
