package modelrouter

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Kind is how a model is reached.
type Kind string

// The kinds of model.
const (
	// Local models run in the agent: Name "fit" is the tier-1 fit of
	// package analysis, "robust" the tier-2 analysis of package robust.
	Local Kind = "local"
	// OpenAI models answer the OpenAI-compatible chat completions API at
	// each of their instances.
	OpenAI Kind = "openai"
)

// The local models' names.
const (
	LocalFit    = "fit"
	LocalRobust = "robust"
)

// DataClass is a data classification, T1 (public) to T4 (most sensitive),
// as the L3 gate names them.
type DataClass string

// The data classes.
const (
	T1 DataClass = "T1"
	T2 DataClass = "T2"
	T3 DataClass = "T3"
	T4 DataClass = "T4"
)

// Rank returns 1..4 for T1..T4 and 0 for anything else.
func (c DataClass) Rank() int {
	if len(c) == 2 && c[0] == 'T' && c[1] >= '1' && c[1] <= '4' {
		return int(c[1] - '0')
	}
	return 0
}

// Sealed reports whether data of class c is sealed at rest (T3, T4, and
// an unknown class, treated as T4; "" is T1): the router's audit events and
// the tracker's confidence statistics then carry no value read from the
// data.
func (c DataClass) Sealed() bool { return c != "" && (c.Rank() == 0 || c.Rank() >= T3.Rank()) }

// Model is one entry of the registry (the `models:` section of the
// configuration).
type Model struct {
	ID   string `yaml:"id" json:"id"`
	Tier int    `yaml:"tier" json:"tier"` // 1 (fast, cheap) .. 3 (best)
	Kind Kind   `yaml:"kind" json:"kind"`
	// Instances are the base URLs of an OpenAI model (…/v1); the router
	// balances over them and keeps a circuit breaker per instance.
	Instances []string `yaml:"instances,omitempty" json:"instances,omitempty"`
	// Name is the model's name in the API, or the local model (fit, robust).
	Name string `yaml:"model" json:"model"`
	// APIKeyFile or APIKeyEnv names where the API key is; never the key.
	APIKeyFile string `yaml:"api_key_file,omitempty" json:"api_key_file,omitempty"`
	APIKeyEnv  string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// ContextWindow is the model's context in tokens.
	ContextWindow int `yaml:"context_window,omitempty" json:"context_window,omitempty"`
	// CostIn and CostOut are the price per 1000 input and output tokens.
	CostIn  float64 `yaml:"cost_per_1k_input,omitempty" json:"cost_per_1k_input,omitempty"`
	CostOut float64 `yaml:"cost_per_1k_output,omitempty" json:"cost_per_1k_output,omitempty"`
	// Latency is the typical latency of one answer; an attempt times out
	// after three times it.
	Latency time.Duration `yaml:"typical_latency" json:"typical_latency"`
	// RPM caps requests per minute to the model (0: no cap).
	RPM int `yaml:"rpm_limit,omitempty" json:"rpm_limit,omitempty"`
	// Cleared is the highest data class the model may be sent.
	Cleared DataClass `yaml:"data_class_cleared" json:"data_class_cleared"`
	// Default marks the tier-1 model the router always runs first.
	Default bool `yaml:"default,omitempty" json:"default,omitempty"`
}

// Remote reports whether the model is reached over the network.
func (m Model) Remote() bool { return m.Kind == OpenAI }

// Registry is the set of models the router chooses from.
type Registry struct {
	Models []Model `yaml:"models" json:"models"`
}

// Problem is one thing wrong in a registry: the model's index and the key.
type Problem struct {
	Index int    // of the model in Models
	Key   string // e.g. "tier", "instances[0]"
	Msg   string
}

// String is "models[i].key: message".
func (p Problem) String() string { return fmt.Sprintf("models[%d].%s: %s", p.Index, p.Key, p.Msg) }

// Problems lists every problem of the registry at once: duplicate ids,
// tiers outside 1–3, unknown kinds or local names, OpenAI models without an
// instance, with a bad URL or without a context window, negative costs,
// unknown data classes, and not exactly one default tier-1 model. (An
// inline key cannot be written: the registry has no field for one; the
// configuration check refuses such a key.)
func (r Registry) Problems() []Problem {
	var out []Problem
	bad := func(i int, key, f string, a ...any) {
		out = append(out, Problem{Index: i, Key: key, Msg: fmt.Sprintf(f, a...)})
	}
	seen := map[string]int{}
	defaults := 0
	for i, m := range r.Models {
		if strings.TrimSpace(m.ID) == "" {
			bad(i, "id", "missing")
		} else if j, dup := seen[m.ID]; dup {
			bad(i, "id", "%q already used by models[%d]", m.ID, j)
		} else {
			seen[m.ID] = i
		}
		if m.Tier < 1 || m.Tier > 3 {
			bad(i, "tier", "%d is not 1, 2 or 3", m.Tier)
		}
		switch m.Kind {
		case Local:
			if m.Name != LocalFit && m.Name != LocalRobust {
				bad(i, "model", "local model %q is not %q or %q", m.Name, LocalFit, LocalRobust)
			}
		case OpenAI:
			if len(m.Instances) == 0 {
				bad(i, "instances", "an openai model needs at least one instance URL")
			}
			for k, u := range m.Instances {
				if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
					bad(i, fmt.Sprintf("instances[%d]", k), "%q is not an http(s) URL", u)
				}
			}
			if m.Name == "" {
				bad(i, "model", "missing the API's model name")
			}
			if m.ContextWindow < 512 {
				bad(i, "context_window", "%d tokens is too small for a spectrum's description (≥ 512)", m.ContextWindow)
			}
			if m.APIKeyFile != "" && m.APIKeyEnv != "" {
				bad(i, "api_key_file", "give api_key_file or api_key_env, not both")
			}
		default:
			bad(i, "kind", "%q is not local or openai", m.Kind)
		}
		if m.CostIn < 0 || m.CostOut < 0 {
			bad(i, "cost_per_1k_input", "costs must not be negative")
		}
		if m.Latency < 0 {
			bad(i, "typical_latency", "must not be negative")
		}
		if m.RPM < 0 {
			bad(i, "rpm_limit", "must not be negative")
		}
		if m.Cleared.Rank() == 0 {
			bad(i, "data_class_cleared", "%q is not T1–T4", m.Cleared)
		}
		if m.Default {
			defaults++
			if m.Tier != 1 || m.Kind != Local {
				bad(i, "default", "the default model must be a local tier-1 model")
			}
		}
	}
	if defaults != 1 {
		out = append(out, Problem{Index: -1, Key: "default", Msg: fmt.Sprintf("exactly one model must be the tier-1 default, %d are", defaults)})
	}
	return out
}

// Validate returns nil or an error wrapping ErrBadRegistry listing every
// problem.
func (r Registry) Validate() error {
	ps := r.Problems()
	if len(ps) == 0 {
		return nil
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return fmt.Errorf("%w: %s", ErrBadRegistry, strings.Join(s, "; "))
}

// DefaultRegistry is the two local models alone: the tier-1 fit (the
// default) and the tier-2 robust analysis, both cleared for T4 (the data
// never leaves the agent).
func DefaultRegistry() Registry {
	return Registry{Models: []Model{
		{ID: "local-fit", Tier: 1, Kind: Local, Name: LocalFit, Latency: time.Millisecond, Cleared: T4, Default: true},
		{ID: "local-robust", Tier: 2, Kind: Local, Name: LocalRobust, Latency: 10 * time.Millisecond, Cleared: T4},
	}}
}
