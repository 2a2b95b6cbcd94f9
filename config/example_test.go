package config_test

import (
	"fmt"

	"github.com/toolbus/toolbus/config"
)

func ExampleParse() {
	_, err := config.Parse("worker.yaml", []byte(`
groups:
  - name: exec
    description: Shell commands.
  - name: exec
    description: The same name again.
builtins:
  tools:
    - name: rm_rf
middleware:
  default_timeout: 30
`))
	fmt.Println(err)
	// Output:
	// worker.yaml:5: groups[1].name: duplicate group "exec"
	// worker.yaml:9: builtins.tools[0].name: unknown built-in tool "rm_rf": want one of echo, sleep, view_text_file, write_text_file, insert_text_file, execute_shell_command, execute_python_code
	// worker.yaml:11: middleware.default_timeout: invalid value "30": want a duration such as 30s, 1m30s or 2h
}

// A command overrides the file with its flags, then validates again.
func ExampleConfig_Validate() {
	cfg, err := config.Parse("worker.yaml", []byte("log_level: info\n"))
	if err != nil {
		panic(err)
	}
	cfg.NATS.URLs = []string{"nats://10.0.0.1:4222", "http://10.0.0.2:8222"} // from --nats
	fmt.Println(cfg.Validate())
	// Output:
	// worker.yaml: nats.urls[1]: invalid URL "http://10.0.0.2:8222": scheme "http" is not one of nats, tls, ws, wss
}
