package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"hcp-edge/cmd/hcp-edge/internal/discovery"
	"hcp-edge/cmd/hcp-edge/internal/recipes"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/transport/wire"
)

// Capabilities is `hcp-edge capabilities`: what discovery answers a
// harness, from the configuration alone.
func Capabilities(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capabilities", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("capabilities"))
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
		return ExitUsage
	}
	reg, from, err := loadRegistry(*cfgPath, f.Agent.CapabilitiesDir)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: capability declarations (%s): %v\n", from, err)
		return ExitUsage
	}
	spec, err := rigconfig.Spec(f.Rig)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: configuration: %v\n", err)
		return ExitUsage
	}
	env, err := envelope.Compile(f.Envelope, spec)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: envelope: %v\n", err)
		return ExitUsage
	}
	// The recipes as the daemon offers them: shipped and recipes_dir, each
	// checked against this envelope; one that fails is not offered.
	set, err := recipes.Load(env, recipes.Dir(*cfgPath, f.Agent.RecipesDir), nil)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: recipes: %v\n", err)
		return ExitUsage
	}
	for _, e := range set.Refused {
		fmt.Fprintf(stderr, "hcp-edge capabilities: not offered: %v\n", e)
	}
	for _, p := range set.Problems {
		fmt.Fprintf(stderr, "hcp-edge capabilities: not offered: %s\n", p)
	}
	caps, err := set.Capabilities(reg.All())
	if err == nil {
		err = reg.Replace(caps...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge capabilities: recipes: %v\n", err)
		return ExitUsage
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
		r, err := discovery.Offers(f.Agent.AMQP.CalleeID, c, f.Gate, reg, env, *only)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge capabilities: %v (a capabilities_request from it is refused forbidden)\n", err)
			return ExitFailure
		}
		out = append(out, r)
	}
	if *asJSON {
		if *as != "" {
			printJSON(stdout, out[0])
		} else {
			printJSON(stdout, out)
		}
		return ExitOK
	}
	for i, r := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeOffers(stdout, r)
	}
	return ExitOK
}

// writeOffers prints r for a person.
func writeOffers(w io.Writer, r *wire.CapabilitiesResponse) {
	fmt.Fprintf(w, "caller %s on %s: up to %s, data up to %s\n", r.CallerID, r.CalleeID, r.MaxRiskLevel, r.MaxDataClassification)
	if len(r.Capabilities) == 0 {
		fmt.Fprintln(w, "  no capabilities")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CAPABILITY\tVERSION\tRISK\tAPPROVAL\tSAFETY ENVELOPE")
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
		fmt.Fprintf(tw, "  %s\t%s\t%s–%s\t%t\t%s\n", o.Capability.Name, o.Capability.Version, o.RiskFloor, s.RiskCeiling, s.RequiresHumanApproval, env)
	}
	_ = tw.Flush()
}
