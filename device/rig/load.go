package rig

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// Parse decodes the rig section of a configuration document (the `rig:`
// key; the other sections are left to their owners), strictly: an unknown
// key of the rig section is an error at its line. It expands the paths
// (Expand) and checks the structure (Validate); the returned Config is
// usable only when err is nil.
func Parse(data []byte) (Config, error) {
	c, err := Decode(data)
	if err != nil {
		return Config{}, err
	}
	c.Expand()
	return c, c.Validate()
}

// Decode decodes the rig section of a configuration document strictly, and
// nothing more: no path is expanded, nothing is checked.
func Decode(data []byte) (Config, error) {
	var doc struct {
		Rig  Config               `yaml:"rig"`
		Rest map[string]yaml.Node `yaml:",inline"` // the agent's sections
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return Config{}, err
	}
	return doc.Rig, nil
}

// Load reads a configuration file's rig section (Parse); every problem is
// reported with the file's name.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("rig: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("rig: %s: %w", path, err)
	}
	return c, nil
}
