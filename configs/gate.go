package configs

import _ "embed"

// GateEscalations is configs/gate/escalations.yaml: the gate's built-in
// input escalations (session/gate.DefaultConfig reads it), the rules that
// raise a shipped capability's task from its inputs, kept as data so that
// no process input is named in Go. 1 kB, embedded as it is.
//
//go:embed gate/escalations.yaml
var GateEscalations []byte
