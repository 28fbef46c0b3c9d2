package configs

import (
	"embed"
	"sync"
)

// Profiles are configs/profiles/*.yaml, the shipped instrument profiles
// (drivers/profile; docs/INSTRUMENTS.md), by name ("profiles/<id>.yaml"):
// the configuration names one by its ID, and a profile of the same ID in
// the configuration's profiles_dir replaces the shipped one. Embedded
// gzip-compressed (gz.go).
var Profiles = sync.OnceValue(func() Files { return unpack(profilesGz, "profiles/*.yaml.gz") })

//go:embed profiles/*.yaml.gz
var profilesGz embed.FS
