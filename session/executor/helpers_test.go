package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"hcp-edge/session/capability"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
)

// memSink records events in order.
type memSink struct {
	mu     sync.Mutex
	events []recorded
}

type recorded struct {
	Type lifecycle.EventType
	Data any
}

func (s *memSink) Emit(_ context.Context, t lifecycle.EventType, data any) error {
	if !t.Valid() {
		return fmt.Errorf("invalid event type %q", t)
	}
	if _, err := json.Marshal(data); err != nil {
		return err
	}
	s.mu.Lock()
	s.events = append(s.events, recorded{t, data})
	s.mu.Unlock()
	return nil
}

func (s *memSink) of(t lifecycle.EventType) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []any
	for _, e := range s.events {
		if e.Type == t {
			out = append(out, e.Data)
		}
	}
	return out
}

// memCkpt stores checkpoints in memory.
type memCkpt struct {
	mu  sync.Mutex
	all []Checkpoint
}

func (c *memCkpt) Checkpoint(_ context.Context, cp Checkpoint) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, cp)
	return fmt.Sprintf("ckpt-%03d", len(c.all)), nil
}

func registry(t testing.TB) *capability.Registry {
	t.Helper()
	reg, err := capability.LoadDir(filepath.Join("..", "..", "configs", "capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func resolve(t testing.TB, name string) *capability.Capability {
	t.Helper()
	c, err := registry(t).Resolve(name, "1.x")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// seedExpected is the expected_output of seeds/002 (L4 TaskSubmit example).
var seedExpected = &ExpectedOutput{
	Format:         "raman_spectrum_analysis",
	RequiredFields: []string{"peak_distance", "layer_count", "confidence"},
	Schema: json.RawMessage(`{"type":"object","required":["peak_distance","layer_count"],"properties":{
		"peak_distance":{"type":"number"},"layer_count":{"type":"integer"},
		"confidence":{"type":"number","minimum":0,"maximum":1}}}`),
}

// shippedExecutor is the executor of the shipped recipe of that capability
// name (configs/recipes), loaded as the agent loads it.
func shippedExecutor(t testing.TB, name string) *RecipeExecutor {
	t.Helper()
	srcs, err := recipe.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		r, err := recipe.Load(s.Name, s.Data)
		if err != nil {
			t.Fatal(err)
		}
		if r.Name == name {
			x, err := NewRecipeExecutor(r)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	t.Fatalf("no shipped recipe %s", name)
	return nil
}
