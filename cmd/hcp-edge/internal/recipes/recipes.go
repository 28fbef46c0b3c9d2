package recipes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
)

// ErrWritable: a recipe file or directory is writable by group or others.
var ErrWritable = errors.New("recipes: writable by group or others")

// PermissionError is a recipe file or directory refused for its mode. It
// wraps ErrWritable.
type PermissionError struct {
	Path string
	Mode fs.FileMode
}

// Error names the path, its mode and the remedy.
func (e *PermissionError) Error() string {
	return fmt.Sprintf("recipes: %s is writable by group or others (mode %v): only its owner may change what the rig does (chmod go-w)", e.Path, e.Mode.Perm())
}

// Unwrap returns ErrWritable.
func (e *PermissionError) Unwrap() error { return ErrWritable }

// Set is one load of the recipes.
type Set struct {
	// Recipes passed the check, shipped first, then the directory's in
	// file-name order.
	Recipes   []*recipe.Recipe
	Executors []*executor.RecipeExecutor
	// Problems are every problem of every recipe refused by the check
	// (each names its file).
	Problems recipe.Problems
	// Refused are the files (or the directory) refused before the check:
	// permissions, unreadable, not a directory.
	Refused []error
	// NotForRig are the shipped recipes made for another rig: refused by the
	// check because they need a gas line or instrument this rig does not
	// have (a problem of rule recipe.RuleRig). They are not offered, and not
	// an error: every rig gets every shipped recipe, and a recipe needing a
	// gas line this rig lacks is expected. Their problems are not in
	// Problems.
	// A lab's own recipe (recipes_dir) is never here: on its own rig, a
	// missing line is a mistake.
	NotForRig []NotForRig
}

// NotForRig is a shipped recipe this rig cannot run.
type NotForRig struct {
	File string // recipes/<name>.yaml
	Name string // the recipe's name ("" when it could not be read)
	// Needs are its recipe.RuleRig problems (what the rig lacks, at
	// FILE:LINE); Others its other problems, for the record.
	Needs, Others recipe.Problems
}

// Known is the content each recipe name and version had when first
// loaded (name@version → sha256), carried from load to load.
type Known map[string]string

// Load reads the shipped recipes and dir's *.yaml files ("" none), checks
// them all against env with recipe.CheckAll, and refuses a recipe whose
// name and version known holds with other content; known learns every
// recipe that passed. A directory or file writable by group or others is
// refused (*PermissionError), its recipes not loaded.
func Load(env *envelope.Envelope, dir string, known Known) (*Set, error) {
	srcs, err := recipe.Shipped()
	if err != nil {
		return nil, err
	}
	shipped := map[string]recipe.Source{}
	for _, src := range srcs {
		shipped[src.Name] = src
	}
	s := &Set{}
	if dir != "" {
		own, refused := readDir(dir)
		srcs = append(srcs, own...)
		s.Refused = refused
	}
	ok, probs := recipe.CheckAll(env, srcs...)
	s.Problems, s.NotForRig = notForRig(env, shipped, probs)
	for _, r := range ok {
		id := r.Name + "@" + r.Version
		if sum, seen := known[id]; seen && sum != r.SHA256 {
			s.Problems = append(s.Problems, recipe.Problem{File: r.File, Key: "version", Rule: recipe.RuleDuplicate,
				Message: fmt.Sprintf("%s %s was loaded with other content (sha256 %.12s…, here %.12s…): a change of content needs a new version",
					r.Name, r.Version, sum, r.SHA256)})
			continue
		}
		s.Recipes = append(s.Recipes, r)
	}
	for _, r := range s.Recipes {
		if known != nil {
			known[r.Name+"@"+r.Version] = r.SHA256
		}
	}
	if s.Executors, err = executor.RecipeExecutors(s.Recipes); err != nil {
		return nil, err
	}
	return s, nil
}

// notForRig splits off the problems of the shipped recipes that need a
// gas line or instrument env's rig lacks (NotForRig); the rest stay
// problems.
func notForRig(env *envelope.Envelope, shipped map[string]recipe.Source, probs recipe.Problems) (recipe.Problems, []NotForRig) {
	byFile := map[string]*NotForRig{}
	var order []string
	for _, p := range probs {
		if _, ok := shipped[p.File]; ok && p.Rule == recipe.RuleRig && byFile[p.File] == nil {
			byFile[p.File] = &NotForRig{File: p.File}
			order = append(order, p.File)
		}
	}
	var rest recipe.Problems
	for _, p := range probs {
		n := byFile[p.File]
		switch {
		case n == nil:
			rest = append(rest, p)
		case p.Rule == recipe.RuleRig:
			n.Needs = append(n.Needs, p)
		default:
			n.Others = append(n.Others, p)
		}
	}
	out := make([]NotForRig, 0, len(order))
	for _, f := range order {
		n := byFile[f]
		if r, err := recipe.LoadFor(f, shipped[f].Data, recipe.Hazards(env)); err == nil {
			n.Name = r.Name
		}
		out = append(out, *n)
	}
	return rest, out
}

// NotForRigNames are the names of the shipped recipes made for another rig.
func (s *Set) NotForRigNames() []string {
	var out []string
	for _, n := range s.NotForRig {
		if n.Name != "" {
			out = append(out, n.Name)
		}
	}
	return out
}

// readDir reads dir's *.yaml files (at most recipe.MaxSize + 1 bytes
// each, for Load to refuse), refusing the directory or a file writable by
// group or others, a file that is not regular, or one that cannot be read.
func readDir(dir string) ([]recipe.Source, []error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, []error{fmt.Errorf("recipes: recipes_dir: %w", err)}
	}
	if !st.IsDir() {
		return nil, []error{fmt.Errorf("recipes: recipes_dir %s is not a directory", dir)}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, []error{&PermissionError{Path: dir, Mode: st.Mode()}}
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, []error{fmt.Errorf("recipes: %w", err)}
	}
	slices.Sort(paths)
	var out []recipe.Source
	var refused []error
	for _, p := range paths {
		data, err := readFile(p)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		out = append(out, recipe.Source{Name: p, Data: data})
	}
	return out, refused
}

func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("recipes: %w", err)
	}
	defer f.Close()
	st, err := f.Stat() // the file opened, not the name: no swap between the check and the read
	if err != nil {
		return nil, fmt.Errorf("recipes: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("recipes: %s is not a regular file", p)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, &PermissionError{Path: p, Mode: st.Mode()}
	}
	data, err := io.ReadAll(io.LimitReader(f, recipe.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("recipes: %s: %w", p, err)
	}
	return data, nil
}

// Capabilities returns base with the recipes' capabilities: a recipe
// replaces a declaration of the same name and version in base.
func (s *Set) Capabilities(base []*capability.Capability) ([]*capability.Capability, error) {
	var rcaps []*capability.Capability
	for _, r := range s.Recipes {
		c, err := r.Capability()
		if err != nil {
			return nil, err
		}
		rcaps = append(rcaps, c)
	}
	var out []*capability.Capability
	for _, c := range base {
		if slices.ContainsFunc(rcaps, func(r *capability.Capability) bool { return r.Name == c.Name && r.SemVer.Equal(c.SemVer) }) {
			continue
		}
		out = append(out, c)
	}
	return append(out, rcaps...), nil
}

// Log logs every refusal — the file and why, each problem on its own
// line — at level error, each shipped recipe made for another rig at level
// info (what the rig lacks, once per load), and what was loaded.
func (s *Set) Log(log *slog.Logger, dir string) {
	for _, err := range s.Refused {
		log.Error("recipe refused", "err", err)
	}
	byFile := map[string][]string{}
	var files []string
	for _, p := range s.Problems {
		if _, ok := byFile[p.File]; !ok {
			files = append(files, p.File)
		}
		byFile[p.File] = append(byFile[p.File], p.String())
	}
	for _, f := range files {
		log.Error("recipe refused: it is not offered", "file", f, "problems", strings.Join(byFile[f], "; "))
	}
	for _, n := range s.NotForRig {
		var needs []string
		for _, p := range n.Needs {
			needs = append(needs, p.String())
		}
		log.Info("shipped recipe not for this rig: not offered", "recipe", n.Name, "file", n.File, "needs", strings.Join(needs, "; "))
	}
	var names []string
	for _, r := range s.Recipes {
		names = append(names, r.Name+"@"+r.Version)
	}
	log.Info("recipes loaded", "recipes_dir", dir, "offered", strings.Join(names, ", "), "refused", len(files)+len(s.Refused),
		"not_for_this_rig", strings.Join(s.NotForRigNames(), ", "))
}

// Dir is agent.recipes_dir as a path: relative to the configuration
// file's directory (cfgPath "": the working directory); "" stays "".
func Dir(cfgPath, dir string) string {
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	base := "."
	if cfgPath != "" {
		base = filepath.Dir(cfgPath)
	}
	return filepath.Join(base, dir)
}
