// Package processnames holds the test that keeps process and rig names out
// of the product's Go; it has no non-test code.
//
// A material, a precursor gas or a recipe's input (processWords, in the
// test) is a fact of a process, and processes are data: recipes (configs/recipes), capability declarations
// (configs/capabilities), rig configurations (configs/*.yaml) and the
// gate's rules (configs/gate/escalations.yaml). Two places may know them in
// Go: firmware-sim, which simulates the processes, and session/analysis,
// whose models are of materials (the layers above take the names from
// analysis.Materials). TestNoProcessNameInGo reads every non-test Go file
// outside those two, comments included, and fails naming FILE:LINE of any
// such name, in any case.
//
// # Caveats
//
// The words are a list: a new process's names join it when it ships. The
// layout's role and line names (pump, h2_valve, …) are checked by
// rigconfig's TestNoRigNameInGo.
package processnames
