package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"hcp-edge/firmware-sim/control"
	"hcp-edge/firmware-sim/modbussim"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/ptyline"
	"hcp-edge/firmware-sim/serialsim"
)

// File names inside the run directory.
const (
	RTUName     = "modbus-rtu"
	ControlName = "control.sock"
)

// SerialStarter starts the serial instruments on p in dir; the result is
// closed by Rig.Close.
type SerialStarter func(ctx context.Context, p *plant.Plant, dir string) (io.Closer, error)

// SerialInstruments is the SerialStarter of the full rig: the MFCs, the gauge
// and the Raman spectrometer of firmware-sim/serialsim on <dir>/mfc-ar,
// mfc-h2, mfc-h2s (mfc-ch4 on the graphene rig), gauge and raman.
func SerialInstruments(ctx context.Context, p *plant.Plant, dir string) (io.Closer, error) {
	return serialsim.StartAll(ctx, p, dir)
}

// SerialInstrumentsWith is SerialInstruments with options: the gauge
// controller's variant (rig-sim --gauge-model, --gauge-continuous), the
// MFCs' variants (--mfc-variant), the noise seed.
func SerialInstrumentsWith(o serialsim.Opts) SerialStarter {
	return func(ctx context.Context, p *plant.Plant, dir string) (io.Closer, error) {
		return serialsim.StartAllOpts(ctx, p, dir, o)
	}
}

// Opts configures a rig.
type Opts struct {
	Dir            string  // run directory (created)
	ModbusAddr     string  // Modbus TCP address, e.g. 127.0.0.1:5020
	TimeScale      float64 // sim seconds per wall second
	RelayEnergised bool    // start with the interlock relay energised
	// RelayWatchdog is the relay watchdog's timeout (plant.Opts.RelayWatchdog):
	// the relay's coil drops when the heartbeat pin shows no edge for that
	// long. 0, the default, fits no watchdog.
	RelayWatchdog time.Duration
	// Precursor is what the precursor boat holds at start: plant.MoO3 (the
	// default, "" too) grows MoS2, plant.WO3 grows WS2. The control API's
	// PUT /precursor (control.Client.SetPrecursor) changes it later.
	Precursor plant.Precursor
	// FurnaceModel and DIOModel choose the maps units 1 and 2 serve ("": the
	// sim models; configs/rig-protocols.md, Real controller models). A
	// eurotherm3200 has no comms watchdog: fit RelayWatchdog with it.
	FurnaceModel plant.FurnaceModel
	DIOModel     plant.DIOModel
	// Eurotherm is the eurotherm3200's front-panel configuration (dEC.P,
	// rmP.U; nil: plant.DefaultEurothermConfig).
	Eurotherm *plant.EurothermConfig
	// Rig is the rig simulated ("": plant.RigMoS2; plant.RigGraphene is the
	// graphene-on-copper rig of configs/graphene.yaml; plant.RigMoS2TwoZone
	// the two-zone furnace, whose <dir>/modbus-rtu is its zones' RS-485
	// line, the sulfur zone's 3200 at unit 1 and the growth zone's at 2:
	// it needs FurnaceModel plant.FurnaceEurotherm3200).
	Rig plant.Rig
	// RTUBaud is the baud rate the RTU line at <dir>/modbus-rtu emulates,
	// 11 bits a character (8E1, as the shipped configurations' 19200 8E1):
	// each exchange takes the time it takes on a real line
	// (modbussim.RTUOpts.CharTime). 0, the default: a pty's speed.
	RTUBaud int
	Logger  *slog.Logger
	// StartSerial starts the serial instruments (nil: none).
	StartSerial SerialStarter
}

// DefaultOpts returns the defaults of configs/rig-protocols.md
// ($HCP_RIG_SIM_DIR overrides the directory).
func DefaultOpts() Opts {
	dir := os.Getenv("HCP_RIG_SIM_DIR")
	if dir == "" {
		dir = "/tmp/hcp-rig-sim"
	}
	return Opts{Dir: dir, ModbusAddr: "127.0.0.1:5020", TimeScale: 300}
}

// Rig is a running simulated rig.
type Rig struct {
	opts    Opts
	plant   *plant.Plant
	tcp     *modbussim.TCPServer
	line    *ptyline.Line
	rtu     *modbussim.RTUSlave
	ctl     *control.Server
	serial  io.Closer
	closers []func() error
}

// Start brings up a rig.
func Start(ctx context.Context, opts Opts) (r *Rig, err error) {
	d := DefaultOpts()
	if opts.Dir == "" {
		opts.Dir = d.Dir
	}
	if opts.ModbusAddr == "" {
		opts.ModbusAddr = d.ModbusAddr
	}
	if opts.TimeScale <= 0 {
		opts.TimeScale = d.TimeScale
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	r = &Rig{opts: opts}
	defer func() {
		if err != nil {
			_ = r.Close()
			r = nil
		}
	}()
	po := plant.DefaultOpts()
	po.TimeScale = opts.TimeScale
	po.RelayEnergised = opts.RelayEnergised
	po.RelayWatchdog = opts.RelayWatchdog
	if opts.Precursor != "" {
		po.Precursor = opts.Precursor
	}
	po.FurnaceModel, po.DIOModel, po.Rig = opts.FurnaceModel, opts.DIOModel, opts.Rig
	po.Eurotherm = opts.Eurotherm
	if r.plant, err = plant.New(po); err != nil {
		return r, err
	}
	if err = r.plant.Start(); err != nil {
		return r, err
	}
	r.closers = append(r.closers, r.plant.Close)

	if r.tcp, err = modbussim.ListenTCP(ctx, r.plant, opts.ModbusAddr, modbussim.TCPOpts{Logger: opts.Logger}); err != nil {
		return r, err
	}
	r.closers = append(r.closers, r.tcp.Close)

	if r.line, err = ptyline.Open(filepath.Join(opts.Dir, RTUName)); err != nil {
		return r, err
	}
	r.closers = append(r.closers, r.line.Close)
	r.rtu = modbussim.ServeRTU(r.plant, r.line, modbussim.RTUOpts{Logger: opts.Logger,
		CharTime: modbussim.LineCharTime(opts.RTUBaud, 11)})
	r.closers = append(r.closers, r.rtu.Close)

	if opts.StartSerial != nil {
		if r.serial, err = opts.StartSerial(ctx, r.plant, opts.Dir); err != nil {
			return r, fmt.Errorf("rig: serial instruments: %w", err)
		}
		r.closers = append(r.closers, r.serial.Close)
	}

	// The control socket comes last: callers wait for it as the sign that
	// every instrument's port is in place.
	if r.ctl, err = control.Listen(r.plant, filepath.Join(opts.Dir, ControlName), control.Opts{Logger: opts.Logger}); err != nil {
		return r, err
	}
	r.closers = append(r.closers, r.ctl.Close)
	return r, nil
}

// Plant is the rig's plant.
func (r *Rig) Plant() *plant.Plant { return r.plant }

// ModbusAddr is the Modbus TCP listen address.
func (r *Rig) ModbusAddr() net.Addr { return r.tcp.Addr() }

// Dir is the run directory.
func (r *Rig) Dir() string { return r.opts.Dir }

// RTUPath is the Modbus RTU link (<dir>/modbus-rtu).
func (r *Rig) RTUPath() string { return r.line.Link() }

// ControlPath is the control socket (<dir>/control.sock).
func (r *Rig) ControlPath() string { return r.ctl.Path() }

// Close stops everything in reverse order and waits for it.
func (r *Rig) Close() error {
	var errs []error
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i]())
	}
	r.closers = nil
	return errors.Join(errs...)
}
