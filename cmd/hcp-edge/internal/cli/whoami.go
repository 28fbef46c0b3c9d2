package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"hcp-edge/cmd/hcp-edge/internal/control"
)

// whoamiView is the daemon's whoami reply.
type whoamiView struct {
	UID          uint32   `json:"uid"`
	GID          uint32   `json:"gid"`
	User         string   `json:"user"`
	Display      string   `json:"display"`
	Roles        []string `json:"roles"`
	Unconfigured bool     `json:"unconfigured,omitempty"`
	Note         string   `json:"note,omitempty"`
}

// Whoami is `hcp-edge whoami`: the OS user the daemon sees on the control
// socket (from the kernel, not from a flag), the display name and the
// roles it holds.
func Whoami(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whoami", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("whoami"))
		fs.PrintDefaults()
	}
	operator := fs.String("operator", "", "the display name to check (default: your own)")
	asJSON := fs.Bool("json", false, "print JSON")
	cfgPath := configFlag(fs)
	sock := socketFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge whoami: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	rep, ok := ask(ctx, control.OpWhoami, socketPath(*sock, *cfgPath), control.Request{Op: control.OpWhoami, Operator: *operator}, stderr)
	if !ok {
		if *asJSON {
			_ = json.NewEncoder(stdout).Encode(rep)
		}
		return ExitFailure
	}
	if *asJSON {
		_, _ = stdout.Write(append(rep.Result, '\n'))
		return ExitOK
	}
	var w whoamiView
	if err := json.Unmarshal(rep.Result, &w); err != nil {
		fmt.Fprintf(stderr, "hcp-edge whoami: bad reply: %v\n", err)
		return ExitFailure
	}
	fmt.Fprintf(stdout, "OS user:  %s (uid %d, gid %d)\ndisplay:  %s\nroles:    %s\n", w.User, w.UID, w.GID, w.Display, strings.Join(w.Roles, ", "))
	if w.Note != "" {
		fmt.Fprintf(stdout, "note:     %s\n", w.Note)
	}
	return ExitOK
}
