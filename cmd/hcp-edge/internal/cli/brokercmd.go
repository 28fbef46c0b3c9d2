package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"hcp-edge/transport/provision"
)

// Broker is `hcp-edge broker provision`.
func Broker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "provision" {
		return groupUsage(args, "usage: hcp-edge broker provision --config FILE [--dry-run] [--vhost V] [--callee-user U] [--rabbitmqctl PATH] [--node NODE]\n", stdout, stderr)
	}
	fs := flag.NewFlagSet("broker provision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := configFlag(fs)
	dry := fs.Bool("dry-run", false, "print the changes without making them")
	vhost := fs.String("vhost", "", "virtual host (default: the vhost of agent.amqp.url)")
	calleeUser := fs.String("callee-user", "", "the agent's broker user (default: the user of agent.amqp.url)")
	ctl := fs.String("rabbitmqctl", "", "rabbitmqctl executable (default: from $PATH, else /usr/sbin/rabbitmqctl)")
	node := fs.String("node", "", "RabbitMQ node (rabbitmqctl -n; default: the local node)")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on the whole provisioning")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge broker provision --config FILE [--dry-run] [flags]

Derives the narrowest RabbitMQ permissions from the agent's configuration and applies them with
rabbitmqctl (run it on the broker host as root or the rabbitmq user): the vhost of agent.amqp.url;
the callee's user (the user of agent.amqp.url) may declare the two exchanges and its command queue
hcp.cmd.{callee_id}, consume only that queue and publish only to hcp.events; each caller of
gate.broker_users may declare, bind (only with "{caller_id}." keys), consume, purge and delete only
its own hcp.evt.{caller_id}, and publish only to hcp.commands (only when gate.callers lets it use a
capability). Refuses a configuration whose users overlap. Idempotent: prints each change it makes
(nothing when the broker already matches), then reads the broker back to check. Users it creates
get no password (client-certificate login only): set one with rabbitmqctl change_password.

rabbitmqctl rather than the management HTTP API: it ships with every broker, needs no plugin and
no administrator password in the agent's configuration, and reads and writes the whole state in
one structured document (export_definitions / import_definitions).

exit codes: 0 provisioned (or, with --dry-run, planned); 1 rabbitmqctl failed or the broker did
not converge; 2 usage, configuration or overlapping users.

flags:
`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args[1:], stdout)
	if err != nil {
		return usageExit(err)
	}
	if *cfgPath == "" || len(pos) != 0 {
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "hcp-edge broker provision: unexpected argument %q\n", pos[0])
		} else {
			fmt.Fprintln(stderr, "hcp-edge broker provision: --config is required")
		}
		fs.Usage()
		return ExitUsage
	}
	f, err := loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "broker provision: %v\n", err)
		return ExitUsage
	}
	spec, notes, err := f.BrokerSpec(*vhost, *calleeUser)
	if err != nil {
		fmt.Fprintf(stderr, "broker provision: %s: %v\n", *cfgPath, err)
		return ExitUsage
	}
	grants, err := provision.Derive(spec)
	if err != nil {
		fmt.Fprintf(stderr, "broker provision: %s: %v\n", *cfgPath, err)
		return ExitUsage
	}
	for _, n := range notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	r := provision.Rabbitmqctl{Path: *ctl, Node: *node}
	st, err := provision.Read(ctx, r)
	if err != nil {
		fmt.Fprintf(stderr, "broker provision: %v\n", err)
		return ExitFailure
	}
	changes, warnings := provision.Diff(st, grants)
	for _, w := range warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	verb := "change"
	if *dry {
		verb = "would change"
	}
	for _, c := range changes {
		fmt.Fprintf(stdout, "%s: %s\n", verb, c)
		if c.Kind == provision.AddUser {
			fmt.Fprintf(stdout, "note: user %s is created without a password: rabbitmqctl change_password %s ..., or log in with a client certificate (EXTERNAL)\n", c.User, c.User)
		}
	}
	if len(changes) == 0 {
		fmt.Fprintf(stdout, "vhost %s: nothing to change (%d users already provisioned)\n", grants.VHost, len(grants.Users))
		return ExitOK
	}
	if *dry {
		fmt.Fprintf(stdout, "dry run: %d changes not made\n", len(changes))
		return ExitOK
	}
	if err := provision.Apply(ctx, r, grants, changes, provision.Options{}); err != nil {
		fmt.Fprintf(stderr, "broker provision: %v\n", err)
		return ExitFailure
	}
	fmt.Fprintf(stdout, "vhost %s: %d changes made and verified\n", grants.VHost, len(changes))
	return ExitOK
}
