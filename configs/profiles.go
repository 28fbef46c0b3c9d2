package configs

import "embed"

// Profiles holds configs/profiles/*.yaml, the shipped instrument profiles
// (drivers/profile; docs/INSTRUMENTS.md): the configuration names one by its
// file name without .yaml, and a profile of the same name in the
// configuration's profiles_dir replaces the shipped one.
//
//go:embed profiles/*.yaml
var Profiles embed.FS
