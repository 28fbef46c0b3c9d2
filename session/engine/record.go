package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"hcp-edge/session/recipe"
	"hcp-edge/session/store"
)

// SessionRecord is what a stored session's metadata holds for its record
// (hcp-edge export): the task_submit payload, the pinned recipe and its
// file, when it started running, and the operators' signatures.
type SessionRecord struct {
	Submit       json.RawMessage  // the task_submit payload (inputs, intent, constraints)
	Recipe       *recipe.Identity // nil: the session runs no recipe
	RecipeSource []byte           // the pinned recipe file
	RunningSince time.Time        // PENDING → RUNNING (zero: never ran)
	Operator     string           // the local operator who submitted, if any
	Approvals    []Signature      // oldest first
}

// RecordOf reads s's metadata as a SessionRecord.
func RecordOf(s store.Session) (SessionRecord, error) {
	var m meta
	if len(s.Metadata) > 0 {
		if err := json.Unmarshal(s.Metadata, &m); err != nil {
			return SessionRecord{}, fmt.Errorf("engine: session %s metadata: %w", s.ID, err)
		}
	}
	return SessionRecord{Submit: m.Submit, Recipe: m.Recipe, RecipeSource: m.RecipeSource, RunningSince: m.RunningSince,
		Operator: m.Operator, Approvals: m.Approvals}, nil
}
