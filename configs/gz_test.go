package configs

import (
	"bytes"
	"os"
	"testing"
)

// TestCompressedSchemasCurrent: each embedded .json.gz opens to its .json,
// byte for byte, so an edited schema without `make schemas-gz` fails here.
func TestCompressedSchemasCurrent(t *testing.T) {
	for name, got := range map[string][]byte{
		"hcp-edge.schema.json": Schema(),
		"recipe.schema.json":   RecipeSchema(),
	} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the embedded %s.gz is not %s (%d bytes against %d): run make schemas-gz", name, name, len(got), len(want))
		}
	}
}
