package recipe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"hcp-edge/configs"
)

// jsonOf converts a YAML document to the JSON value the schema validates.
func jsonOf(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestShippedRecipesMatchSchema: every shipped recipe validates against
// configs/recipe.schema.json and names it in its editor modeline.
func TestShippedRecipesMatchSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(configs.RecipeSchema()))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://hcp-edge.invalid/configs/recipe.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	names := configs.Recipes().Names()
	for _, n := range names {
		data := configs.Recipes()[n]
		if !strings.HasPrefix(string(data), "# yaml-language-server: $schema=../recipe.schema.json\n") {
			t.Errorf("%s: first line is not the editor modeline", n)
		}
		if err := s.Validate(jsonOf(t, data)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	// And the schema refuses what Load refuses for its shape.
	bad := []byte("name: x\nversion: 1.0.0\ndescription: d\nphases: [{grow: {}}]\ncleanup: {purge: PT5M}\n")
	if err := s.Validate(jsonOf(t, bad)); err == nil {
		t.Error("schema accepts an unknown phase")
	}
}
