package configcheck

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/drivers/profile"
)

// EmbeddedName names the embedded default configuration in reports.
const EmbeddedName = "configs/sim.yaml (embedded)"

// checker accumulates the problems of one configuration.
type checker struct {
	file string
	root *yaml.Node // the document's content as written; nil if it did not parse
	res  Result
}

// at reports a problem at a dotted key path of the configuration.
func (c *checker) at(key, format string, a ...any) {
	p := Problem{File: c.file, Key: key, Message: fmt.Sprintf(format, a...)}
	if c.root != nil {
		p.Line, p.Column, _ = Locate(c.root, key)
	}
	c.res.Problems = append(c.res.Problems, p)
}

// Check validates the configuration at path ("" = the embedded
// configs/sim.yaml) and the capability declarations in capDir ("" = beside
// the configuration, else configs/capabilities from the working directory):
// the schema, then the rules of the Go code (see the package comment).
// HCP_STATE_DIR, HCP_CONTROL_SOCKET and HCP_RIG_SIM_DIR apply as they do
// for the daemon.
func Check(path, capDir string) Result {
	c := &checker{file: path}
	var data []byte
	if path == "" {
		c.file, data = EmbeddedName, configs.SimYAML
	} else {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			c.res.Problems = append(c.res.Problems, Problem{File: path, Message: err.Error()})
			return c.finish()
		}
	}
	c.res.File = c.file
	c.check(data, path, capDir)
	return c.finish()
}

var syntaxLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`) })

// check runs the schema layer on data, then the Go rules on what it left.
func (c *checker) check(data []byte, path, capDir string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p := Problem{File: c.file, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := syntaxLineRE().FindStringSubmatch(err.Error()); m != nil {
			p.Line = profile.SyntaxLine(data, err) // the yaml package's line is where the construct around the mistake began
			p.Message = m[2]
		}
		c.res.Problems = append(c.res.Problems, p)
		return
	}
	if len(doc.Content) == 0 {
		c.res.Problems = append(c.res.Problems, Problem{File: c.file, Message: "empty configuration"})
		return
	}
	c.root = doc.Content[0]

	// The schema layer works on a second copy of the tree, which it prunes
	// of what it refuses; the rules run on what remains.
	var pruned yaml.Node
	_ = yaml.Unmarshal(data, &pruned)
	s, err := LoadSchema()
	if err != nil {
		c.res.Problems = append(c.res.Problems, Problem{File: c.file, Message: err.Error()})
		return
	}
	t := convert(c.file, pruned.Content[0])
	findings := s.validate(c.file, t)
	for _, p := range t.problems {
		findings = append(findings, finding{Problem: p})
	}
	for _, f := range findings {
		c.res.Problems = append(c.res.Problems, f.Problem)
	}
	if len(findings) > 0 {
		prune(findings, t.dups)
		data = flowText(&pruned) // each value at its own line (flow.go)
	}
	n := len(c.res.Problems)
	c.rules(data, t.value, path, capDir)
	c.dropShadowed(n, findings)
}

// dropShadowed removes the problems after the first n whose key is the key
// of a schema problem or below it (the value the schema refused, pruned,
// caused them), or is the mapping a schema problem found a required key
// missing from.
func (c *checker) dropShadowed(n int, schema []finding) {
	kept := c.res.Problems[:n]
	for _, p := range c.res.Problems[n:] {
		shadowed := false
		for _, s := range schema {
			if s.Key == "" || p.Key == s.Key || strings.HasPrefix(p.Key, s.Key+".") || strings.HasPrefix(p.Key, s.Key+"[") ||
				(s.missing && p.Key != "" && strings.HasPrefix(s.Key, p.Key+".")) {
				shadowed = true
				break
			}
		}
		if !shadowed {
			kept = append(kept, p)
		}
	}
	c.res.Problems = kept
}

// rules checks the decoded configuration: what rigconfig.Parse validates,
// then the cross-section rules (rules.go). value is the document as the
// schema saw it.
func (c *checker) rules(data []byte, value any, path, capDir string) {
	f, err := rigconfig.Parse(bytes.NewReader(data))
	for _, e := range flatten(err) {
		if pp := rigconfig.ProfileProblems(e); len(pp) > 0 { // in a profile file, at its own line
			for _, p := range pp {
				c.res.Problems = append(c.res.Problems, Problem{File: p.File, Line: p.Line, Key: p.Key, Message: p.Message})
			}
			continue
		}
		if e == profile.ErrProfile { // the wrapper of problems reported above
			continue
		}
		key, msg := splitKey(e.Error())
		c.at(key, "%s", msg)
	}
	if f.Agent.StateDir == "" && err != nil {
		return // it did not decode (the schema layer should have said why)
	}
	c.checkEnvelope(f)
	c.checkPaths(f)
	c.checkDisk(f)
	c.checkOperators(f)
	c.checkKeyFiles(value, "")
	caps := c.checkCapabilities(path, capDir)
	c.checkRetention(f, c.checkRecipes(f, path, caps))
}

// finish sorts the problems and sets Valid.
func (c *checker) finish() Result {
	if c.res.File == "" {
		c.res.File = c.file
	}
	sort.SliceStable(c.res.Problems, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b Problem) int {
			if a.File != b.File {
				return strings.Compare(a.File, b.File)
			}
			return a.Line - b.Line
		}(c.res.Problems[i], c.res.Problems[j]) < 0
	})
	c.res.Problems = slices.CompactFunc(c.res.Problems, func(a, b Problem) bool { return a == b })
	if c.res.Problems == nil {
		c.res.Problems = []Problem{}
	}
	c.res.Valid = len(c.res.Problems) == 0
	return c.res
}

// flatten unwraps joined errors into their leaves.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// splitKey splits "rig.mfcs[2].full_scale: reason" into the key path and the
// reason; a message without a key path prefix keeps its whole text.
func splitKey(msg string) (key, reason string) {
	k, r, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(k, " \t\n") {
		return "", msg
	}
	section, _, _ := strings.Cut(k, ".")
	section, _, _ = strings.Cut(section, "[")
	switch section {
	case "rig", "envelope", "monitor", "agent", "gate", "models", "model_routing", "operators", "retention", "alerts":
		return k, r
	}
	return "", msg
}
