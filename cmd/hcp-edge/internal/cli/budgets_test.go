package cli

import (
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/budget"
)

func TestPrintBudgets(t *testing.T) {
	lim := 10.0
	var sb strings.Builder
	printBudgets(&sb, []reply.Budget{{SessionID: "s1", Capability: "cvd", State: "RUNNING", Report: budget.Report{Lines: []budget.Line{
		{Budget: budget.GasVolume, Gas: "H2S", Unit: "scc", Used: 2.5, Limit: &lim},
		{Budget: budget.Actions, Unit: "actions", Used: 3},
	}}}})
	out := sb.String()
	if !strings.Contains(out, "gas_volume.H2S") || !strings.Contains(out, "25%") || !strings.Contains(out, "SHARE") {
		t.Fatalf("status budgets:\n%s", out)
	}
	if got := budgetCell(&budget.Report{Lines: []budget.Line{
		{Budget: budget.WallTime, Unit: "s", Used: 9, Limit: &lim},
		{Budget: budget.GasVolume, Gas: "H2S", Unit: "scc", Used: 2.5, Limit: &lim},
	}}); got != "gas_volume.H2S 25%" {
		t.Fatalf("budgetCell = %q", got)
	}
	if budgetCell(nil) != "-" {
		t.Fatal("budgetCell(nil)")
	}
}
