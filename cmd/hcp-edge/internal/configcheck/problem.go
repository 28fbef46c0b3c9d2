package configcheck

import (
	"hcp-edge/session/recipe"
)

// Problem is one finding of the check: FILE:LINE: KEY: MESSAGE, the same
// shape as a recipe's (`hcp-edge recipe check` and `config check` print
// alike; a configuration problem leaves Rule empty).
type Problem = recipe.Problem

// Result is what the check reports.
type Result struct {
	File         string    `json:"file"`
	Valid        bool      `json:"valid"`
	Problems     []Problem `json:"problems"`
	Capabilities []string  `json:"capabilities,omitempty"` // name@version of each declaration checked
	Notes        []string  `json:"notes,omitempty"`
}
