package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"hcp-edge/envelope"
)

// Envelope is `hcp-edge envelope coverage`: every writable channel and the
// envelope rule that bounds it.
func Envelope(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "coverage" {
		return groupUsage(args, "usage: hcp-edge envelope coverage [--config FILE] [--json]\n\nRun \"hcp-edge envelope coverage -h\" for the flags.\n", stdout, stderr)
	}
	fs := flag.NewFlagSet("envelope coverage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("envelope-coverage"))
		fs.PrintDefaults()
	}
	cfgPath := configFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseArgs(fs, args[1:], stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge envelope coverage: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	env, err := compileEnvelope(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge envelope coverage: %v\n", err)
		return ExitUsage
	}
	cov := env.Coverage()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(cov)
		return ExitOK
	}
	_ = envelope.WriteCoverage(stdout, cov)
	return ExitOK
}

// compileEnvelope loads the configuration and compiles its envelope
// against the rig it describes.
func compileEnvelope(cfgPath string) (*envelope.Envelope, error) {
	f, err := loadConfig(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return f.CompileEnvelope()
}
