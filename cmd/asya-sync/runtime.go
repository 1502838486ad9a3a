package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// runtimeScript is the script actors run: the embedded one, or the file
// $ASYA_RUNTIME_SCRIPT_PATH names. With runtimeDelivery initContainer the
// pods get the script of runtimeImage's binary, so a replacement could
// never reach them and is refused.
func runtimeScript(cfg *config.Config) (asyaruntime.Script, error) {
	path := os.Getenv("ASYA_RUNTIME_SCRIPT_PATH")
	if path != "" && cfg.RuntimeDelivery == asyaruntime.InitContainer {
		return asyaruntime.Script{}, fmt.Errorf("ASYA_RUNTIME_SCRIPT_PATH cannot replace the script with runtimeDelivery %s: the pods run the script built into %s",
			asyaruntime.InitContainer, cfg.RuntimeImage)
	}
	return asyaruntime.Load(path)
}

// runWriteRuntime writes an embedded runtime script to the path given,
// executable: the init container of runtimeDelivery initContainer. With
// --http it is the flat actors' script, which talks HTTP.
func runWriteRuntime(args []string) error {
	script := asyaruntime.Embedded()
	if len(args) == 2 && args[0] == children.HTTPRuntimeFlag {
		script, args = asyaruntime.EmbeddedHTTP(), args[1:]
	}
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("write-runtime takes the file to write, after %s for the HTTP runtime", children.HTTPRuntimeFlag)
	}
	return os.WriteFile(args[0], []byte(script.Source), 0o755)
}
