package rig

import (
	"fmt"
	"slices"
)

// Hazard is a gas line's hazard class: the one vocabulary the layout, the
// envelope's interlocks and rules, the recipes and the gate's hazards
// escalation share.
type Hazard string

// The hazard classes.
const (
	Inert     Hazard = "inert"
	Toxic     Hazard = "toxic"
	Flammable Hazard = "flammable"
	Oxidising Hazard = "oxidising"
	Corrosive Hazard = "corrosive"
)

// hazards is the vocabulary, in the order messages list it.
var hazards = []Hazard{Inert, Toxic, Flammable, Oxidising, Corrosive}

// HazardWords lists the vocabulary for messages: "inert, toxic, flammable,
// oxidising or corrosive".
const HazardWords = "inert, toxic, flammable, oxidising or corrosive"

// Hazards returns every hazard class.
func Hazards() []Hazard { return slices.Clone(hazards) }

// Valid reports whether h is one of the hazard classes.
func (h Hazard) Valid() bool {
	switch h {
	case Inert, Toxic, Flammable, Oxidising, Corrosive:
		return true
	}
	return false
}

// ParseHazard returns the hazard class s names, or an error listing the
// vocabulary.
func ParseHazard(s string) (Hazard, error) {
	if h := Hazard(s); h.Valid() {
		return h, nil
	}
	return "", fmt.Errorf("%q is not a hazard class (%s)", s, HazardWords)
}
