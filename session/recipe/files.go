package recipe

import (
	"fmt"

	"hcp-edge/device/rig"

	"hcp-edge/configs"
	"hcp-edge/envelope"
)

// Source is one recipe file to check: its name (as problems show it) and
// its content.
type Source struct {
	Name string
	Data []byte
}

// CheckAll loads every source and checks it against env, and refuses a
// recipe with the name and version of an earlier one but different
// content (the same file twice is one recipe). It returns the recipes that
// passed, in order, and every problem of every file. A recipe that fails
// is never offered.
func CheckAll(env *envelope.Envelope, srcs ...Source) ([]*Recipe, Problems) {
	var ok []*Recipe
	var all Problems
	seen := map[string]*Recipe{}
	for _, src := range srcs {
		r, err := LoadFor(src.Name, src.Data, Hazards(env))
		if err != nil {
			if ps, isPs := err.(Problems); isPs {
				all = append(all, ps...)
			} else {
				all = append(all, Problem{File: src.Name, Message: err.Error()})
			}
			continue
		}
		ps := Check(r, env)
		id := r.Name + "@" + r.Version
		if first, dup := seen[id]; dup && first.SHA256 != r.SHA256 {
			ps = append(ps, Problem{File: r.File, Line: r.versionLine, Key: "version", Rule: RuleDuplicate,
				Message: fmt.Sprintf("%s %s is also %s:%d with different content (sha256 %.12s…, here %.12s…): give this one a new version",
					r.Name, r.Version, first.File, first.versionLine, first.SHA256, r.SHA256)})
		} else if !dup {
			seen[id] = r
		}
		all = append(all, ps...)
		if len(ps) == 0 {
			ok = append(ok, r)
		}
	}
	return ok, all
}

// Hazards are the hazard classes of env's gas lines, by gas, for LoadFor.
func Hazards(env *envelope.Envelope) map[string]rig.Hazard {
	out := map[string]rig.Hazard{}
	for _, g := range env.Spec().Gases {
		out[g.Gas] = g.Hazard
	}
	return out
}

// Shipped returns the recipes shipped in the binary (configs/recipes,
// configs.Recipes), named recipes/FILE, for CheckAll.
func Shipped() ([]Source, error) {
	shipped := configs.Recipes()
	out := make([]Source, 0, len(shipped))
	for _, n := range shipped.Names() {
		out = append(out, Source{Name: n, Data: shipped[n]})
	}
	return out, nil
}
