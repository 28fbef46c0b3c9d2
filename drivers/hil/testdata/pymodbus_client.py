#!/usr/bin/python3
"""A pymodbus 3.x client that reads the rig simulator over Modbus TCP and prints
what it read as JSON, for drivers/hil's peer test. Usage:

    pymodbus_client.py HOST PORT

It reads the furnace (unit 1): input registers 0..8, holding registers 0..5 and
the float32 process value (IR 4-5, high word first); and the digital I/O module
(unit 2): coils 0..6 and discrete inputs 0..2.
"""
import json
import struct
import sys

from pymodbus.client import ModbusTcpClient


def check(rr, what):
    if rr.isError():
        raise SystemExit("%s: %s" % (what, rr))
    return rr


def main():
    client = ModbusTcpClient(sys.argv[1], port=int(sys.argv[2]), timeout=3)
    if not client.connect():
        raise SystemExit("cannot connect")
    try:
        ir = check(client.read_input_registers(0, 9, slave=1), "input registers").registers
        hr = check(client.read_holding_registers(0, 6, slave=1), "holding registers").registers
        pv = check(client.read_input_registers(4, 2, slave=1), "float PV").registers
        coils = check(client.read_coils(0, 7, slave=2), "coils").bits[:7]
        di = check(client.read_discrete_inputs(0, 3, slave=2), "discrete inputs").bits[:3]
    finally:
        client.close()
    pv_float = struct.unpack(">f", struct.pack(">HH", pv[0], pv[1]))[0]
    print(json.dumps({"ir": ir, "hr": hr, "pv_float": pv_float,
                      "coils": [bool(b) for b in coils], "di": [bool(b) for b in di]}))


if __name__ == "__main__":
    main()
