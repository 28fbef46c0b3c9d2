package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
)

// parseArgs parses a verb's flags and positional arguments in any order (the
// flag package alone stops at the first positional one) and returns the
// positional ones.
//
// -h and --help print the verb's usage on stdout and return flag.ErrHelp: help
// that was asked for is output, not an error (the GNU and Go convention). Any
// other problem is printed, with the usage, on the FlagSet's output (stderr).
// A verb's fs.Usage must therefore write to fs.Output(). usageExit turns the
// error into the exit code.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	errOut := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	defer fs.SetOutput(errOut)
	var pos []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			_, _ = stdout.Write(buf.Bytes())
			return nil, err
		case err != nil:
			_, _ = errOut.Write(buf.Bytes())
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usageExit is the exit code of a verb whose arguments did not parse: exitOK
// when the user asked for help (-h, --help), exitUsage otherwise.
func usageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// isHelp reports whether arg asks for help the way the flag package
// understands it (-h, -help, --h, --help).
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help", "help":
		return true
	}
	return false
}

// groupUsage prints a command group's short usage (audit, config, envelope,
// artifact without a valid sub-command): on stdout with exit 0 when help was
// asked for, on stderr with exit 2 otherwise.
func groupUsage(args []string, text string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		_, _ = io.WriteString(stdout, text)
		return ExitOK
	}
	_, _ = io.WriteString(stderr, text)
	return ExitUsage
}
