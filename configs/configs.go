// Package configs holds the configuration files that ship inside the hcp-edge
// binary. The files themselves are documentation too: read them beside
// rig-protocols.md.
package configs

import (
	_ "embed"
	"sync"
)

// SimYAML is configs/sim.yaml: the embedded default configuration, which runs
// against bin/rig-sim's defaults on loopback. The binary holds it
// gzip-compressed (gz.go) and opens it at start (10 kB, microseconds).
var SimYAML = gunzip("sim.yaml", simGz)

//go:embed sim.yaml.gz
var simGz []byte

// Schema returns configs/hcp-edge.schema.json: the JSON Schema (draft
// 2020-12) of the agent's configuration, which hcp-edge config check
// validates against and editors with YAML language support use to validate
// and complete a configuration file. The binary holds it gzip-compressed
// (gz.go) and opens it on first use.
var Schema = sync.OnceValue(func() []byte { return gunzip("hcp-edge.schema.json", schemaGz) })

//go:embed hcp-edge.schema.json.gz
var schemaGz []byte
