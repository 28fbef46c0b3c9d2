// Package configs holds the configuration files that ship inside the hcp-edge
// binary. The files themselves are documentation too: read them beside
// rig-protocols.md.
package configs

import _ "embed"

// SimYAML is configs/sim.yaml: the embedded default configuration, which runs
// against bin/rig-sim's defaults on loopback.
//
//go:embed sim.yaml
var SimYAML []byte
