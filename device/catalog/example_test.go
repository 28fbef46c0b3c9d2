package catalog_test

import (
	"fmt"

	"github.com/hcp-edge/hcp-edge/device/catalog"
)

func Example() {
	reg, err := catalog.Builtin()
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
