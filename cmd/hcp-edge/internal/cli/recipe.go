package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"hcp-edge/configs"
	"hcp-edge/session/recipe"
)

// Recipe is `hcp-edge recipe check|simulate|schema`.
func Recipe(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "check":
		return recipeCheckCmd(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "simulate":
		return recipeSimulateCmd(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "schema":
		if len(args) > 1 && !isHelp(args[1]) {
			fmt.Fprintf(stderr, "hcp-edge recipe schema: unexpected argument %q\n", args[1])
			return ExitUsage
		}
		_, _ = stdout.Write(configs.RecipeSchema())
		return ExitOK
	}
	return groupUsage(args, "usage: hcp-edge recipe check [--config FILE] [--json] FILE...\n       hcp-edge recipe simulate [--config FILE] [--inputs JSON|@FILE] [--json] [--out DIR] FILE|CAPABILITY\n       hcp-edge recipe schema\n\nRun \"hcp-edge recipe check -h\" or \"hcp-edge recipe simulate -h\" for the flags.\n", stdout, stderr)
}

// recipeResult is one file's outcome, as --json prints it.
type recipeResult struct {
	File     string           `json:"file"`
	Valid    bool             `json:"valid"`
	Recipe   *recipe.Identity `json:"recipe,omitempty"`
	Policy   *recipe.Policy   `json:"policy,omitempty"`
	Problems []recipe.Problem `json:"problems"`
}

func recipeCheckCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recipe check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("recipe-check"))
		fs.PrintDefaults()
	}
	cfgPath := configFlag(fs)
	asJSON := fs.Bool("json", false, "print the results as JSON")
	files, err := parseArgs(fs, args, stdout)
	if err != nil || len(files) == 0 {
		if err == nil {
			fmt.Fprintln(stderr, "hcp-edge recipe check: give at least one FILE")
		}
		return usageExit(err)
	}
	env, err := compileEnvelope(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge recipe check: %v\n", err)
		return ExitUsage
	}
	var srcs []recipe.Source
	var readProblems recipe.Problems
	for _, f := range files {
		data, err := readCapped(f, recipe.MaxSize+1)
		if err != nil {
			readProblems = append(readProblems, recipe.Problem{File: f, Message: err.Error()})
			continue
		}
		srcs = append(srcs, recipe.Source{Name: f, Data: data})
	}
	ok, problems := recipe.CheckAll(env, srcs...)
	problems = append(readProblems, problems...)
	results := make([]recipeResult, 0, len(files))
	for _, f := range files {
		res := recipeResult{File: f, Problems: []recipe.Problem{}}
		for _, p := range problems {
			if p.File == f {
				res.Problems = append(res.Problems, p)
			}
		}
		for _, r := range ok {
			if r.File == f {
				id, pol := r.Identity(), r.Policy()
				res.Recipe, res.Policy, res.Valid = &id, &pol, true
			}
		}
		sort.SliceStable(res.Problems, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
			return func(a, b recipe.Problem) int { return a.Line - b.Line }(res.Problems[i], res.Problems[j]) < 0
		})
		results = append(results, res)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
	} else {
		for _, res := range results {
			for _, p := range res.Problems {
				fmt.Fprintln(stdout, p)
			}
			if res.Valid {
				fmt.Fprintf(stdout, "%s: valid (%s %s, sha256 %.12s, risk floor %s, %s)\n", res.File, res.Recipe.Name, res.Recipe.Version,
					res.Recipe.SHA256, res.Policy.RiskFloor, res.Policy.DataClassification)
			} else {
				fmt.Fprintf(stdout, "%s: %d problem(s)\n", res.File, len(res.Problems))
			}
		}
	}
	if len(problems) > 0 {
		return ExitFailure
	}
	return ExitOK
}

// readCapped reads at most limit bytes of a file: a recipe larger than
// recipe.MaxSize is refused by its size without reading it all.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
