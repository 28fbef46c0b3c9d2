package configs

import (
	"embed"
	"sync"
)

// Recipes holds configs/recipes/*.yaml, the shipped process recipes
// (session/recipe; docs/RECIPES.md).
//
//go:embed recipes/*.yaml
var Recipes embed.FS

// RecipeSchema returns configs/recipe.schema.json: the JSON Schema (draft
// 2020-12) of the recipe format, named by each recipe's editor modeline
// ("# yaml-language-server: $schema=../recipe.schema.json"). The binary
// holds it gzip-compressed (gz.go) and opens it on first use.
var RecipeSchema = sync.OnceValue(func() []byte { return gunzip("recipe.schema.json", recipeSchemaGz) })

//go:embed recipe.schema.json.gz
var recipeSchemaGz []byte
