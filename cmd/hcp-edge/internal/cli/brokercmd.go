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
		fmt.Fprint(fs.Output(), usageText("broker-provision"))
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
