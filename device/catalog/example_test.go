package catalog_test

import (
	"fmt"

	"hcp-edge/device/catalog"
)

func Example() {
	// The rig's gas lines, from its layout (envelope.RigSpec.Lines).
	reg, err := catalog.Builtin(catalog.Lines{Gases: []string{"Ar", "H2", "H2S"}, Valves: []string{"ar_valve", "h2_valve", "h2s_valve"}})
	if err != nil {
		panic(err)
	}
	tools, _ := reg.Lookup("gas_handling")
	for _, t := range tools {
		fmt.Println(t.Ref(), t.Safety.Permission, t.Safety.RiskLevel)
	}
	flow, _ := reg.Describe(catalog.ToolSetFlow, "")
	fmt.Println(flow.ValidateInputJSON([]byte(`{"gas": "H2S", "flow": 5, "unit": "sccm"}`)) == nil)
	fmt.Println(flow.ValidateInputJSON([]byte(`{"gas": "H2S", "flow": 5}`)) != nil)
	// Output:
	// gas.set_flow@1.0.0 rig.gas R4
	// valve.set@1.0.0 rig.gas R3
	// true
	// true
}
