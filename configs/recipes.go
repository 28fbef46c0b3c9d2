package configs

import (
	"embed"
	"sync"
)

// Recipes are configs/recipes/*.yaml, the shipped process recipes
// (session/recipe; docs/RECIPES.md), by name ("recipes/<file>.yaml").
// Embedded gzip-compressed (gz.go).
var Recipes = sync.OnceValue(func() Files { return unpack(recipesGz, "recipes/*.yaml.gz") })

//go:embed recipes/*.yaml.gz
var recipesGz embed.FS

// RecipeSchema returns configs/recipe.schema.json: the JSON Schema (draft
// 2020-12) of the recipe format, named by each recipe's editor modeline
// ("# yaml-language-server: $schema=../recipe.schema.json"). The binary
// holds it gzip-compressed (gz.go) and opens it on first use.
var RecipeSchema = sync.OnceValue(func() []byte { return gunzip("recipe.schema.json", recipeSchemaGz) })

//go:embed recipe.schema.json.gz
var recipeSchemaGz []byte
