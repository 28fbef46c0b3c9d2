// Package furnace drives the rig's furnace temperature controller over Modbus
// (unit 1 by default) as a device.TemperatureController.
//
// # Protocol
//
// Register map of configs/rig-protocols.md, "Furnace temperature controller":
// input registers 0 PV (int16, 0.1 °C, 0x7FFF on sensor break), 1 working
// setpoint, 2 output power (0.1 %), 3 alarm bits, 4–5 PV float32 ABCD (NaN on
// sensor break), 6–7 uptime uint32 CDAB, 8 status bits; holding registers
// 0 setpoint, 1 ramp rate, 2 heater enable, 3 watchdog timeout (ms), 4 watchdog
// kick, 5 alarm limit. Every register is configurable (Opts.Registers) as a
// modbus.RegisterSpec.
//
// # Concepts
//
// Status reads all input registers in one FC 04 and the holding registers in
// one FC 03. Setpoint, ramp, heater, alarm limit and watchdog writes are
// range-checked against the controller's documented ranges (ErrOutOfRange,
// nothing sent), written with FC 06 and confirmed by read-back (ErrReadback).
// Halt writes heater enable 0 and confirms it.
//
// # Caveats
//
// The controller's comms watchdog drops the heater if no holding register is
// written for its timeout: call KickWatchdog, or StartWatchdog(ctx, period)
// with a period well below the timeout and Close to stop it.
package furnace
