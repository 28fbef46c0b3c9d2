package rigconfig

import (
	"errors"
	"fmt"
	"time"

	"go.bug.st/serial"

	"github.com/hcp-edge/hcp-edge/drivers/alicat"
	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/drivers/furnace"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
	"github.com/hcp-edge/hcp-edge/drivers/raman"
	"github.com/hcp-edge/hcp-edge/drivers/serialline"
	"github.com/hcp-edge/hcp-edge/drivers/simgpio"
	"github.com/hcp-edge/hcp-edge/drivers/tpg"
)

// Instruments are the rig's drivers, built from a Rig. Close closes every line.
type Instruments struct {
	Furnace *furnace.Controller
	DIO     *dio.Module
	MFCs    []*alicat.MFC // in configuration order
	Gauge   *tpg.Gauge
	Raman   *raman.Spectrometer
	GPIO    *simgpio.Client

	closers []func() error
}

// Build constructs every driver of r. It performs no write on the hardware.
func Build(r Rig) (_ *Instruments, err error) {
	in := &Instruments{}
	defer func() {
		if err != nil {
			_ = in.Close()
		}
	}()
	buses := map[string]*modbus.Bus{}
	for name, bc := range r.ModbusBuses {
		o := modbus.DefaultOpts()
		o.Name = "modbus " + name
		o.Transport, o.Address = bc.Transport, bc.Address
		if bc.Timeout > 0 {
			o.Timeout = bc.Timeout
		}
		if bc.Retries != nil {
			o.Retries = *bc.Retries
		}
		if bc.Mode != "" {
			m, err := serialline.ParseMode(bc.Mode)
			if err != nil {
				return nil, fmt.Errorf("rigconfig: bus %s: %w", name, err)
			}
			o.Baud, o.DataBits, o.Parity, o.StopBits = m.BaudRate, m.DataBits, parity(m.Parity), stopBits(m.StopBits)
		}
		b, err := modbus.New(o)
		if err != nil {
			return nil, fmt.Errorf("rigconfig: bus %s: %w", name, err)
		}
		buses[name] = b
		in.closers = append(in.closers, b.Close)
	}
	fo := furnace.DefaultOpts()
	fo.Unit = r.Furnace.Unit
	if in.Furnace, err = furnace.New(buses[r.Furnace.Bus], fo); err != nil {
		return nil, fmt.Errorf("rigconfig: furnace: %w", err)
	}
	in.closers = append(in.closers, in.Furnace.Close)
	do := dio.DefaultOpts()
	do.Unit = r.DIO.Unit
	if in.DIO, err = dio.New(buses[r.DIO.Bus], do); err != nil {
		return nil, fmt.Errorf("rigconfig: dio: %w", err)
	}
	for _, mc := range r.MFCs {
		o := alicat.DefaultOpts()
		o.Name, o.Gas, o.UnitID = mc.Name, mc.Gas, mc.UnitID[0]
		if o.FullScale, err = ParseFlow(mc.FullScale); err != nil {
			return nil, fmt.Errorf("rigconfig: %s: %w", mc.Name, err)
		}
		if err := serialOpts(&o.Line, mc.Serial, &o.Timeout); err != nil {
			return nil, fmt.Errorf("rigconfig: %s: %w", mc.Name, err)
		}
		m, err := alicat.Open(mc.Port, o)
		if err != nil {
			return nil, fmt.Errorf("rigconfig: %s: %w", mc.Name, err)
		}
		in.MFCs = append(in.MFCs, m)
		in.closers = append(in.closers, m.Close)
	}
	go_ := tpg.DefaultOpts()
	if r.Gauge.Name != "" {
		go_.Name = r.Gauge.Name
	}
	if err := serialOpts(&go_.Line, r.Gauge, &go_.Timeout); err != nil {
		return nil, fmt.Errorf("rigconfig: gauge: %w", err)
	}
	if in.Gauge, err = tpg.Open(r.Gauge.Port, go_); err != nil {
		return nil, fmt.Errorf("rigconfig: gauge: %w", err)
	}
	in.closers = append(in.closers, in.Gauge.Close)
	ro := raman.DefaultOpts()
	if r.Raman.Name != "" {
		ro.Name = r.Raman.Name
	}
	if r.Raman.TimeScale > 0 {
		ro.TimeScale = r.Raman.TimeScale
	}
	if err := serialOpts(&ro.Line, r.Raman.Serial, &ro.Timeout); err != nil {
		return nil, fmt.Errorf("rigconfig: raman: %w", err)
	}
	if in.Raman, err = raman.Open(r.Raman.Port, ro); err != nil {
		return nil, fmt.Errorf("rigconfig: raman: %w", err)
	}
	in.closers = append(in.closers, in.Raman.Close)
	so := simgpio.DefaultOpts()
	so.Socket = r.GPIO.Socket
	if in.GPIO, err = simgpio.New(so); err != nil {
		return nil, fmt.Errorf("rigconfig: gpio: %w", err)
	}
	in.closers = append(in.closers, in.GPIO.Close)
	return in, nil
}

func serialOpts(lo *serialline.Opts, s Serial, timeout *time.Duration) error {
	if s.Mode != "" {
		m, err := serialline.ParseMode(s.Mode)
		if err != nil {
			return err
		}
		lo.Mode = m
	}
	if s.Timeout > 0 {
		*timeout = s.Timeout
	}
	return nil
}

// Close closes every line and bus, in reverse order of opening.
func (in *Instruments) Close() error {
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		errs = append(errs, in.closers[i]())
	}
	in.closers = nil
	return errors.Join(errs...)
}

func parity(p serial.Parity) string {
	switch p {
	case serial.EvenParity:
		return "E"
	case serial.OddParity:
		return "O"
	}
	return "N"
}

func stopBits(s serial.StopBits) int {
	if s == serial.TwoStopBits {
		return 2
	}
	return 1
}
