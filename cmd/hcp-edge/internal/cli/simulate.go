package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/cmd/hcp-edge/internal/preview"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
)

// recipeExecutor turns a recipe file into the executor that runs it. The
// recipe executor (session/recipe → executor.Executor) is not in this
// build yet; once it is, this function's return is the one line to change.
func recipeExecutor(r *recipe.Recipe) (executor.Executor, error) {
	return executor.NewRecipeExecutor(r)
}

func recipeSimulateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recipe simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("recipe-simulate"))
		fs.PrintDefaults()
	}
	cfgPath := configFlag(fs)
	inputsFlag := fs.String("inputs", "{}", "the task's inputs (JSON), or @FILE")
	asJSON := fs.Bool("json", false, "print the prediction as JSON")
	out := fs.String("out", "", "write the run's artifacts (process_profile.svg, ...) to this directory")
	ans := answerFlags{}
	fs.Var(ans, "answer", "NAME=VALUE: the answer to the recipe's question NAME (repeatable)")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil || len(pos) != 1 {
		if err == nil {
			fmt.Fprintln(stderr, "hcp-edge recipe simulate: give one FILE or CAPABILITY")
		}
		return usageExit(err)
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hcp-edge recipe simulate: "+format+"\n", a...)
		return ExitUsage
	}
	f, err := loadConfig(*cfgPath)
	if err != nil {
		return fail("configuration: %v", err)
	}
	inputs, err := taskInputs(*inputsFlag)
	if err != nil {
		return fail("--inputs: %v", err)
	}
	x, capab, err := simulated(pos[0], *cfgPath, f.Agent.CapabilitiesDir, f.Rig.HazardOf(), f.Rig.Layout().Zones)
	if err != nil {
		return fail("%v", err)
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o750); err != nil {
			return fail("--out: %v", err)
		}
	}
	p, err := preview.Run(context.Background(), x, executor.Task{SessionID: "preview", Inputs: inputs},
		preview.Opts{Config: f, Capability: capab, ArtifactDir: *out, Answers: ans})
	if err != nil {
		if errors.Is(err, preview.ErrInput) {
			return fail("invalid input: %v", err)
		}
		return fail("%v", err)
	}
	if *asJSON {
		printJSON(stdout, p)
	} else {
		writePrediction(stdout, p)
	}
	if !p.Completed {
		return ExitFailure
	}
	return ExitOK
}

// simulated finds what to preview: a recipe FILE when arg names a file,
// else a capability with a built-in executor. A recipe heating a zone the
// rig lacks (zones) is refused at the line of its zone: key.
func simulated(arg, cfgPath, capDir string, hazards map[string]rig.Hazard, zones []rig.Zone) (executor.Executor, *capability.Capability, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		data, err := readCapped(arg, recipe.MaxSize+1)
		if err != nil {
			return nil, nil, err
		}
		r, err := recipe.LoadFor(arg, data, hazards)
		if err != nil {
			return nil, nil, err
		}
		names := make([]string, len(zones))
		for i, z := range zones {
			names[i] = z.Name
		}
		if ps := recipe.CheckZones(r, names); len(ps) > 0 {
			return nil, nil, ps
		}
		c, err := r.Capability()
		if err != nil {
			return nil, nil, err
		}
		x, err := recipeExecutor(r)
		return x, c, err
	}
	reg, from, err := loadRegistry(cfgPath, capDir)
	if err != nil {
		return nil, nil, fmt.Errorf("capability declarations (%s): %w", from, err)
	}
	return preview.Builtin(reg, arg)
}

// taskInputs reads --inputs: an inputs object or a task_submit message
// (its payload.inputs), inline or from @FILE.
func taskInputs(v string) (json.RawMessage, error) {
	data := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = readCapped(name, 1<<20); err != nil {
			return nil, err
		}
	}
	var msg struct {
		Payload *struct {
			Inputs json.RawMessage `json:"inputs"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, err
	}
	if msg.Payload != nil && len(msg.Payload.Inputs) > 0 {
		return msg.Payload.Inputs, nil
	}
	return json.RawMessage(data), nil
}

// writePrediction prints p for a technician.
func writePrediction(w io.Writer, p *preview.Prediction) {
	verdict := "completes"
	if !p.Completed {
		verdict = fmt.Sprintf("FAILS: %s in %s: %s", p.Failure.Code, p.Failure.Step, p.Failure.Message)
	}
	fmt.Fprintf(w, "%s: %s\npredicted duration %v (previewed in %v, %.0f× real time)\n\n", p.Capability, verdict,
		p.ProcessTime, time.Duration(p.WallTime).Round(time.Millisecond), p.SpeedUp)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tPHASE\tSTART\tDURATION")
	for _, s := range p.Steps {
		if s.Ran {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\n", s.Name, s.Phase, s.Start, s.Duration)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t-\tnot reached\n", s.Name, s.Phase)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nphases:")
	for _, ph := range p.Phases {
		fmt.Fprintf(w, "  %-18s %v\n", ph.Name, ph.Duration)
	}
	fmt.Fprintln(w, "\ngas used:")
	for _, g := range sortedKeys(p.GasSCC) {
		fmt.Fprintf(w, "  %-5s %10.1f scc\n", g, p.GasSCC[g])
	}
	zones := p.Zones // each zone's course on a rig of several
	if len(zones) < 2 {
		zones = nil
		fmt.Fprintf(w, "heater energy: %.0f s at full output (%.2f h)\n", p.HeaterFullPowerS, p.HeaterFullPowerS/3600)
	}
	for _, z := range zones {
		fmt.Fprintf(w, "zone %-8s peak %.1f °C, end %.1f °C, heater %.0f s at full output\n", z.Name, z.PeakC, z.FinalC, z.HeaterFullPowerS)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIMIT\tBOUND\tCLOSEST\tHEADROOM\tAT\tSTEP")
	for _, m := range p.Margins {
		fmt.Fprintf(tw, "%s %s\t%g %s\t%.4g\t%.4g\t%v\t%s\n", m.Channel, m.Limit, m.Bound, m.Unit, m.Value, m.Headroom, m.At, m.Step)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nrefused actions: %d\n", len(p.Refusals))
	for _, r := range p.Refusals {
		fmt.Fprintf(w, "  at %v in %s: %s: %s\n", r.At, r.Step, r.Action, r.Reason)
	}
	fmt.Fprintf(w, "trips: %d\n", len(p.Trips))
	for _, t := range p.Trips {
		fmt.Fprintf(w, "  at %v in %s: %s (%s): %s\n", t.At, t.Step, t.Trip, t.Procedure, t.Reason)
	}
	if cov := p.Product.Coverage; p.Product.Layers > 0 && cov != nil {
		// A film counted by coverage: the sample's share per layer count.
		fmt.Fprintf(w, "product: %s covering %.0f %% of the sample, %.0f %% one layer, %.0f %% two (Raman would count %d)",
			p.Product.Material, 100*(1-cov["0"]), 100*cov["1"], 100*cov["2"], p.Product.PredictedLayerCount)
		if q := p.Product.Quality; q["domain_um"] > 0 {
			fmt.Fprintf(w, "; D/G %.3f, domains %.1f µm", q["d_g"], q["domain_um"])
		}
		fmt.Fprintln(w)
	} else if p.Product.Layers > 0 {
		count := fmt.Sprint(p.Product.PredictedLayerCount)
		if p.Product.PredictedBulk {
			count = "bulk (4 or more)"
		}
		fmt.Fprintf(w, "product: %.2f layers of %s (Raman would count %s)\n", p.Product.Layers, p.Product.Material, count)
	} else {
		fmt.Fprintln(w, "product: nothing grown")
	}
	if p.Product.Precursor != "" {
		fmt.Fprintf(w, "boat: %s (%s)\n", p.Product.Precursor, p.Product.PrecursorBasis)
	}
	for _, wn := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	for _, a := range p.Artifacts {
		fmt.Fprintf(w, "wrote %s\n", a)
	}
}

// answerFlags are the repeated --answer NAME=VALUE of recipe simulate.
type answerFlags map[string]string

func (a answerFlags) String() string { return "" }

func (a answerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE (the question's name and its answer), got %q", v)
	}
	if _, dup := a[name]; dup {
		return fmt.Errorf("question %s answered twice", name)
	}
	a[name] = value
	return nil
}
