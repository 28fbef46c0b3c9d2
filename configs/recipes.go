package configs

import "embed"

// Recipes holds configs/recipes/*.yaml, the shipped process recipes
// (session/recipe; docs/RECIPES.md).
//
//go:embed recipes/*.yaml
var Recipes embed.FS

// RecipeSchema is configs/recipe.schema.json: the JSON Schema (draft
// 2020-12) of the recipe format, named by each recipe's editor modeline
// ("# yaml-language-server: $schema=../recipe.schema.json").
//
//go:embed recipe.schema.json
var RecipeSchema []byte
