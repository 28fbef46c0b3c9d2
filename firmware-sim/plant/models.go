package plant

import (
	"errors"
	"fmt"
)

// FurnaceModel is the controller model whose register map unit 1 serves
// (configs/rig-protocols.md, Real controller models). The plant behind it is
// the same; only the controller (its map, its loop modes, its off mechanism)
// differs.
type FurnaceModel string

// Furnace controller models.
const (
	// FurnaceSim is the simulator's own controller (configs/rig-protocols.md,
	// unit 1), with heater enable and a comms watchdog. The default.
	FurnaceSim FurnaceModel = "sim"
	// FurnaceEurotherm3200 is the Eurotherm 3200 series of
	// configs/manuals/eurotherm-3200.md: no comms watchdog, output off by
	// manual mode with manual output 0 (or output high limit 0).
	FurnaceEurotherm3200 FurnaceModel = "eurotherm3200"
)

// DIOModel is the digital I/O module whose map unit 2 serves.
type DIOModel string

// Digital I/O models.
const (
	// DIOSim is the simulator's own module (coils 0..6, inputs 0..2). The default.
	DIOSim DIOModel = "sim"
	// DIOADAM6052 is the Advantech ADAM-6052 of configs/manuals/adam-6052.md
	// (DI at coils 0..7, DO at coils 16..23), wired as the sim module.
	DIOADAM6052 DIOModel = "adam6052"
)

// ErrUnknownModel: not a furnace or DIO model the plant emulates.
var ErrUnknownModel = errors.New("plant: unknown instrument model")

// FurnaceModels and DIOModels list the models, default first.
var (
	FurnaceModels = []FurnaceModel{FurnaceSim, FurnaceEurotherm3200}
	DIOModels     = []DIOModel{DIOSim, DIOADAM6052}
)

// ParseFurnaceModel parses a --furnace-model value ("" is FurnaceSim).
func ParseFurnaceModel(s string) (FurnaceModel, error) {
	if s == "" {
		return FurnaceSim, nil
	}
	for _, m := range FurnaceModels {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: furnace model %q (want one of %v)", ErrUnknownModel, s, FurnaceModels)
}

// ParseDIOModel parses a --dio-model value ("" is DIOSim).
func ParseDIOModel(s string) (DIOModel, error) {
	if s == "" {
		return DIOSim, nil
	}
	for _, m := range DIOModels {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: DIO model %q (want one of %v)", ErrUnknownModel, s, DIOModels)
}

// FurnaceModel is the model unit 1 serves (fixed at New).
func (p *Plant) FurnaceModel() FurnaceModel { return p.opts.FurnaceModel }

// DIOModel is the model unit 2 serves (fixed at New).
func (p *Plant) DIOModel() DIOModel { return p.opts.DIOModel }
