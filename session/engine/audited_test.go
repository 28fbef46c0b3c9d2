package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"hcp-edge/session/executor"
)

// TestAuditedWarningDetail: an audited warning's entry holds its code,
// message and details; for a sealed (T3/T4) session its code alone, the
// audit log being in the clear.
func TestAuditedWarningDetail(t *testing.T) {
	w := executor.Warning{Code: executor.CodeMaterialMismatch, Message: "the recipe grows WS2 but the spectrum shows MoS2",
		Details: map[string]any{"expected": "WS2", "found": "MoS2", "code": "not this"}, Audit: true}
	var open, sealed map[string]any
	if err := json.Unmarshal(auditedWarning(w, false), &open); err != nil {
		t.Fatal(err)
	}
	if open["code"] != executor.CodeMaterialMismatch || open["found"] != "MoS2" || open["expected"] != "WS2" || open["message"] != w.Message {
		t.Fatalf("open session: %v", open)
	}
	if err := json.Unmarshal(auditedWarning(w, true), &sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) != 2 || sealed["code"] != executor.CodeMaterialMismatch || sealed["withheld"] != true {
		t.Fatalf("sealed session: %v", sealed)
	}
	if b, _ := json.Marshal(w); strings.Contains(strings.ToLower(string(b)), "audit") {
		t.Fatalf("the event's data carries Audit: %s", b)
	}
}
