package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Registry holds tool specifications indexed by (name, version), id and
// capability tag. It is safe for concurrent use. The zero value is not usable;
// call NewRegistry.
type Registry struct {
	mu     sync.RWMutex
	tools  map[key]Tool
	ids    map[string]key
	byTag  map[string][]key
	sorted []key // ordered by name, then version precedence
}

type key struct{ name, version string }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[key]Tool{}, ids: map[string]key{}, byTag: map[string][]key{}}
}

// Register validates t, compiles its schemas and adds it. It refuses a
// malformed specification (*InvalidToolError), a schema that does not compile
// or whose top level does not describe a JSON object (*SchemaError), and a
// taken (name, version) or id (*DuplicateError). On error nothing changes.
func (r *Registry) Register(t Tool) error {
	t = t.clone()
	if err := t.check(); err != nil {
		return err
	}
	in, err := compileSchema(t, "input_schema", t.InputSchema)
	if err != nil {
		return err
	}
	out, err := compileSchema(t, "output_schema", t.OutputSchema)
	if err != nil {
		return err
	}
	t.in, t.out = in, out

	r.mu.Lock()
	defer r.mu.Unlock()
	k := key{t.Name, t.Version}
	if _, ok := r.tools[k]; ok {
		return &DuplicateError{Name: t.Name, Version: t.Version}
	}
	if _, ok := r.ids[t.ID]; ok {
		return &DuplicateError{Name: t.Name, Version: t.Version, ID: t.ID}
	}
	r.tools[k] = t
	r.ids[t.ID] = k
	for _, tag := range t.Capabilities {
		if !slices.Contains(r.byTag[tag], k) {
			r.byTag[tag] = append(r.byTag[tag], k)
		}
	}
	i, _ := slices.BinarySearchFunc(r.sorted, k, compareKeys)
	r.sorted = slices.Insert(r.sorted, i, k)
	return nil
}

// List returns every tool, ordered by name and then by version precedence.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.sorted))
	for _, k := range r.sorted {
		out = append(out, r.tools[k].clone())
	}
	return out
}

// Describe returns the tool (name, version). An empty version selects the
// highest registered version of name. An unknown tool is an error wrapping
// ErrNotFound.
func (r *Registry) Describe(name, version string) (Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if version != "" {
		t, ok := r.tools[key{name, version}]
		if !ok {
			return Tool{}, fmt.Errorf("catalog: %s@%s: %w", name, version, ErrNotFound)
		}
		return t.clone(), nil
	}
	var best *key
	for i := range r.sorted {
		if r.sorted[i].name == name {
			best = &r.sorted[i] // sorted ascending: the last match is the highest
		}
	}
	if best == nil {
		return Tool{}, fmt.Errorf("catalog: %s: %w", name, ErrNotFound)
	}
	return r.tools[*best].clone(), nil
}

// ByID returns the tool with the given id, or an error wrapping ErrNotFound.
func (r *Registry) ByID(id string) (Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.ids[id]
	if !ok {
		return Tool{}, fmt.Errorf("catalog: tool id %s: %w", id, ErrNotFound)
	}
	return r.tools[k].clone(), nil
}

// Lookup returns the tools carrying every one of the capability tags (at least
// one tag), ordered as List orders them; none is an error wrapping ErrNotFound.
func (r *Registry) Lookup(tags ...string) ([]Tool, error) {
	if len(tags) == 0 {
		return nil, fmt.Errorf("catalog: lookup without a capability tag: %w", ErrNotFound)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Tool
	for _, k := range r.sorted {
		t := r.tools[k]
		if !slices.ContainsFunc(tags, func(tag string) bool { return !t.HasCapability(tag) }) {
			out = append(out, t.clone())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("catalog: capability %s: %w", strings.Join(tags, "+"), ErrNotFound)
	}
	return out, nil
}

// Len returns the number of registered tools.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.tools)
}

func compareKeys(a, b key) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	va, _ := parseSemver(a.version) // validated on Register
	vb, _ := parseSemver(b.version)
	if c := compareSemver(va, vb); c != 0 {
		return c
	}
	return strings.Compare(a.version, b.version) // build metadata: stable order
}

// refuseLoader refuses to load anything: schemas are self-contained.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %s refused: tool schemas must be self-contained", url)
}

// compileSchema compiles one schema (draft 2020-12, formats asserted, nothing
// loaded from outside) and insists its top level is an object schema.
func compileSchema(t Tool, which string, raw []byte) (*jsonschema.Schema, error) {
	fail := func(err error) error { return &SchemaError{Name: t.Name, Version: t.Version, Which: which, Err: err} }
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fail(errors.New("missing"))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fail(err)
	}
	obj, ok := doc.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, fail(errors.New(`the top level must be {"type": "object", ...}`))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	url := "urn:hcp-edge:tool:" + t.Name + ":" + t.Version + ":" + which
	if err := c.AddResource(url, doc); err != nil {
		return nil, fail(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fail(err)
	}
	return s, nil
}
