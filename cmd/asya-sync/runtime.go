package main

import (
	"fmt"
	"os"

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
	if path != "" && children.ScriptInImage(cfg.RuntimeDelivery) {
		return asyaruntime.Script{}, fmt.Errorf("ASYA_RUNTIME_SCRIPT_PATH cannot replace the script with runtimeDelivery %s: the pods run the script built into %s",
			cfg.RuntimeDelivery, cfg.RuntimeImage)
	}
	return asyaruntime.Load(path)
}

// runWriteRuntime writes an embedded runtime script to the path given,
// executable: the init container of runtimeDelivery initContainer, with
// the arguments asyaruntime.WriteArgs gives it.
func runWriteRuntime(args []string) error {
	script, path, err := asyaruntime.ParseWriteArgs(args)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(script.Source), 0o755)
}
