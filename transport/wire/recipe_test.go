package wire

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestTaskAcceptedRecipe: the recipe identity of task_accepted round-trips
// through Encode and Decode; a malformed one is refused naming its field.
func TestTaskAcceptedRecipe(t *testing.T) {
	sid := uuid.New()
	sum := strings.Repeat("ab", 32)
	acc := &TaskAccepted{SessionToken: "tok", RiskLevel: "R3", Recipe: &RecipeIdentity{Name: "ws2-sulfurization", Version: "1.0.0", SHA256: sum}}
	env, err := NewEnvelope(&sid, acc, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body, err := Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := back.TaskAccepted()
	if err != nil || got.Recipe == nil || *got.Recipe != *acc.Recipe {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, tc := range []struct {
		name  string
		r     RecipeIdentity
		field string
	}{
		{"no name", RecipeIdentity{Version: "1.0.0", SHA256: sum}, "payload.recipe.name"},
		{"no version", RecipeIdentity{Name: "x", SHA256: sum}, "payload.recipe.version"},
		{"short sum", RecipeIdentity{Name: "x", Version: "1.0.0", SHA256: "abc"}, "payload.recipe.sha256"},
		{"upper case", RecipeIdentity{Name: "x", Version: "1.0.0", SHA256: strings.ToUpper(sum)}, "payload.recipe.sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := *acc
			a.Recipe = &tc.r
			err := a.Validate()
			var de *DecodeError
			if !errors.As(err, &de) || de.Field != tc.field {
				t.Fatalf("err %v, want one naming %s", err, tc.field)
			}
		})
	}
}
