//go:build !race

package preview

// accuracyScale is rig-sim's time scale in the accuracy test: its default.
// The run's duration includes the agent's own steps' wall time, multiplied
// by the scale (about 0.5 s, 2.4 % of the run, on the quiet development
// VM): see scale_race_test.go.
const accuracyScale = 300
