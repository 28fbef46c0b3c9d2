package configs

import "embed"

// Capabilities holds configs/capabilities/*.json, the shipped capability
// declarations: the agent's default when its configuration names no
// capabilities directory and none lies beside the configuration file.
//
//go:embed capabilities/*.json
var Capabilities embed.FS
