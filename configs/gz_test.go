package configs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCompressedSchemasCurrent: each embedded .json.gz opens to its .json,
// byte for byte, so an edited schema without `make schemas-gz` fails here.
func TestCompressedSchemasCurrent(t *testing.T) {
	for name, got := range map[string][]byte{
		"sim.yaml":             SimYAML,
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
	for _, set := range []struct {
		glob  string
		files Files
	}{{"capabilities/*.json", Capabilities()}, {"profiles/*.yaml", Profiles()}, {"recipes/*.yaml", Recipes()}} {
		names, _ := filepath.Glob(set.glob)
		if len(names) == 0 || len(names) != len(set.files) {
			t.Errorf("%s: %d files, %d embedded: run make schemas-gz", set.glob, len(names), len(set.files))
		}
		for _, n := range names {
			want, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(set.files[n], want) {
				t.Errorf("the embedded %s.gz is not %s: run make schemas-gz", n, n)
			}
		}
	}
}
