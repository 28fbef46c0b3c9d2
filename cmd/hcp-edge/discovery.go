package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/session/capability"
	"github.com/hcp-edge/hcp-edge/session/gate"
	"github.com/hcp-edge/hcp-edge/session/store"
	tamqp "github.com/hcp-edge/hcp-edge/transport/amqp"
	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// extensions serves the uplink's extension requests (docs/PROTOCOL-NOTES.md,
// "Discovery and artifact fetch"): capabilities_request here,
// artifact_request in artifactfetch.go. Both are reads: their answers are
// queued in the inbox's transaction but kept out of its de-duplication
// window (tamqp.Outcome.Unrecorded).
type extensions struct {
	calleeID string
	acl      gate.Config
	reg      *capability.Registry
	env      *envelope.Envelope
	sess     *sessions
	st       *store.Store
	log      *slog.Logger
}

// serveExtensions gives the uplink what its extension requests read: the
// configuration's gate ACL, the capability registry, the rig's envelope
// and the sessions. Call it before Start; without it the requests are
// refused unavailable.
func (u *uplink) serveExtensions(f rigconfig.File, reg *capability.Registry, env *envelope.Envelope, s *sessions) {
	if u == nil {
		return
	}
	u.ext = &extensions{calleeID: u.cfg.CalleeID, acl: f.Gate, reg: reg, env: env, sess: s, st: u.st, log: u.log}
}

// errNoACL: the caller has no entry in the gate's access control list.
var errNoACL = errors.New("no permissions on this agent")

// offers is what callerID may use per acl: every version of every
// capability its ACL names ("*": all), with the declaration and the
// safety envelope of a session of it; only, when set, keeps that
// capability alone. A caller without an ACL entry is errNoACL.
func offers(calleeID, callerID string, acl gate.Config, reg *capability.Registry, env *envelope.Envelope, only string) (*wire.CapabilitiesResponse, error) {
	a, ok := acl.Callers[callerID]
	if !ok {
		return nil, fmt.Errorf("caller %s: %w", callerID, errNoACL)
	}
	out := &wire.CapabilitiesResponse{CalleeID: calleeID, CallerID: callerID, MaxRiskLevel: string(a.MaxRiskLevel),
		MaxDataClassification: string(a.MaxDataClassification), Capabilities: []wire.CapabilityOffer{}}
	for _, c := range reg.All() {
		if !slices.Contains(a.Capabilities, c.Name) && !slices.Contains(a.Capabilities, "*") {
			continue
		}
		if only != "" && c.Name != only {
			continue
		}
		o, err := offer(c, env)
		if err != nil {
			return nil, err
		}
		out.Capabilities = append(out.Capabilities, o)
	}
	return out, nil
}

// offer is c as discovery lists it.
func offer(c *capability.Capability, env *envelope.Envelope) (wire.CapabilityOffer, error) {
	safety, err := json.Marshal(c.Safety)
	if err != nil {
		return wire.CapabilityOffer{}, err
	}
	d := wire.CapabilityDeclaration{Name: c.Name, Version: c.Version, Description: c.Description,
		InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, Safety: safety}
	if c.Constraints != (capability.Constraints{}) {
		if d.Constraints, err = json.Marshal(c.Constraints); err != nil {
			return wire.CapabilityOffer{}, err
		}
	}
	se, err := c.SafetyEnvelope(env)
	if err != nil {
		return wire.CapabilityOffer{}, err
	}
	return wire.CapabilityOffer{Capability: d, SafetyEnvelope: se}, nil
}

// refused is a request_refused answer to cmd, to its login's caller.
func refused(cmd tamqp.Command, code, format string, args ...any) (tamqp.Outcome, error) {
	env, err := wire.NewEnvelope(cmd.Envelope.SessionID, &wire.RequestRefused{RequestType: cmd.Envelope.Type, ReasonCode: code,
		ReasonMessage: fmt.Sprintf(format, args...)}, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	return tamqp.Outcome{Replies: []tamqp.Reply{{CallerID: cmd.MappedCallerID, Envelope: env}}, Unrecorded: true}, nil
}

// capabilities answers a capabilities_request: the asking harness is the
// broker-validated login's caller (cmd.MappedCallerID), never a payload
// field. A login that maps to no caller has no queue to answer to: it is
// logged and acknowledged without an answer, as an abort would be.
func (u *uplink) capabilities(_ context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	if cmd.MappedCallerID == "" {
		u.log.Warn("capabilities_request of a broker user mapped to no caller: not answered", "user", cmd.UserID,
			"message_id", cmd.Envelope.MessageID)
		return tamqp.Outcome{Unrecorded: true}, nil
	}
	if u.ext == nil {
		return refused(cmd, wire.ReasonUnavailable, "this agent does not serve discovery")
	}
	req, err := cmd.Envelope.CapabilitiesRequest()
	if err != nil {
		return refused(cmd, wire.ReasonInvalidInput, "%v", err)
	}
	x := u.ext
	resp, err := offers(x.calleeID, cmd.MappedCallerID, x.acl, x.reg, x.env, req.Capability)
	switch {
	case errors.Is(err, errNoACL):
		u.log.Warn("capabilities_request refused", "user", cmd.UserID, "caller", cmd.MappedCallerID, "err", err)
		return refused(cmd, wire.ReasonForbidden, "caller %s has no permissions on this agent", cmd.MappedCallerID)
	case err != nil:
		return tamqp.Outcome{}, err
	case req.Capability != "" && len(resp.Capabilities) == 0:
		return refused(cmd, wire.ReasonNotFound, "caller %s may use no capability named %q here", cmd.MappedCallerID, req.Capability)
	}
	env, err := wire.NewEnvelope(nil, resp, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	u.log.Info("capabilities_request answered", "user", cmd.UserID, "caller", cmd.MappedCallerID, "capabilities", len(resp.Capabilities))
	return tamqp.Outcome{Replies: []tamqp.Reply{{CallerID: cmd.MappedCallerID, Envelope: env}}, Unrecorded: true}, nil
}

// capabilitiesCmd is `hcp-edge capabilities`: what discovery answers a
// harness, from the configuration alone.
func capabilitiesCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capabilities", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge capabilities [--as HARNESS] [--capability NAME] [--json] [--config FILE]

Prints the capability declarations a caller harness may use on this agent, as a
capabilities_request over the broker answers it (docs/PROTOCOL-NOTES.md): each with its
version, risk ceiling, input and output JSON Schemas and the safety envelope a session of it
is bound by. --as names the harness by its caller id (gate.callers) or its broker login
(gate.broker_users); without --as, every caller in the configuration is listed with what it
may use. Read from the configuration alone; the daemon need not run.

exit codes: 0 printed; 1 the harness has no permissions on this agent; 2 usage or configuration.

examples:
  hcp-edge capabilities
  hcp-edge capabilities --as harness-alpha-001 --json

flags:
`)
		fs.PrintDefaults()
	}
	as := fs.String("as", "", "the harness: its caller id or broker login")
	only := fs.String("capability", "", "only this capability (by name)")
	asJSON := fs.Bool("json", false, "print the capabilities_response payload(s) as JSON")
	cfgPath := configFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge capabilities: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	f, err := loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: configuration: %v\n", err)
		return exitUsage
	}
	reg, from, err := loadRegistry(*cfgPath, f.Agent.CapabilitiesDir)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: capability declarations (%s): %v\n", from, err)
		return exitUsage
	}
	spec, err := rigconfig.Spec(f.Rig)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: configuration: %v\n", err)
		return exitUsage
	}
	env, err := envelope.Compile(f.Envelope, spec)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: envelope: %v\n", err)
		return exitUsage
	}
	var callers []string
	switch {
	case *as == "":
		for c := range f.Gate.Callers {
			callers = append(callers, c)
		}
		slices.Sort(callers)
	case f.Gate.BrokerUsers[*as] != "" && *as != rigconfig.LocalUser:
		callers = []string{f.Gate.BrokerUsers[*as]}
	default:
		callers = []string{*as}
	}
	var out []*wire.CapabilitiesResponse
	for _, c := range callers {
		r, err := offers(f.Agent.AMQP.CalleeID, c, f.Gate, reg, env, *only)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge capabilities: %v (a capabilities_request from it is refused forbidden)\n", err)
			return exitFailure
		}
		out = append(out, r)
	}
	if *asJSON {
		if *as != "" {
			printJSON(stdout, out[0])
		} else {
			printJSON(stdout, out)
		}
		return exitOK
	}
	for i, r := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeOffers(stdout, r)
	}
	return exitOK
}

// writeOffers prints r for a person.
func writeOffers(w io.Writer, r *wire.CapabilitiesResponse) {
	fmt.Fprintf(w, "caller %s on %s: up to %s, data up to %s\n", r.CallerID, r.CalleeID, r.MaxRiskLevel, r.MaxDataClassification)
	if len(r.Capabilities) == 0 {
		fmt.Fprintln(w, "  no capabilities")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CAPABILITY\tVERSION\tRISK CEILING\tAPPROVAL\tSAFETY ENVELOPE")
	for _, o := range r.Capabilities {
		var s capability.Safety
		_ = json.Unmarshal(o.Capability.Safety, &s)
		env := "none (moves nothing)"
		if se := o.SafetyEnvelope; se != nil {
			var limits []string
			for ch, p := range se.Parameters {
				if p.Max != nil {
					limits = append(limits, fmt.Sprintf("%s≤%g %s", ch, *p.Max, p.Unit))
				}
			}
			slices.Sort(limits)
			env = fmt.Sprintf("%d limits (%s), %d prohibited actions, %d emergency procedures", len(se.Parameters),
				strings.Join(limits, ", "), len(se.ProhibitedActions), len(se.EmergencyProcedures))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%t\t%s\n", o.Capability.Name, o.Capability.Version, s.RiskCeiling, s.RequiresHumanApproval, env)
	}
	_ = tw.Flush()
}
