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
		fmt.Fprint(fs.Output(), `usage: hcp-edge whoami [--operator NAME] [--json] [--socket PATH] [--config FILE]

Asks the daemon who it sees: the OS user at this end of the control socket (the kernel's
answer, SO_PEERCRED), the display name it would record (--operator NAME, else the user's own
entry in the operators section) and the roles it holds. A display name that belongs to
another OS user is refused, as every other operation would refuse it.

exit codes: 0 shown; 1 refused or the daemon is down; 2 usage.

examples:
  hcp-edge whoami
  hcp-edge whoami --operator "Olga K"

flags:
`)
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
