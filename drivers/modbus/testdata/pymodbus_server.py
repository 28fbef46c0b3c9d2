#!/usr/bin/python3
"""A pymodbus 3.x server with the rig's register map (units 1 and 2), for the
peer tests of drivers/modbus. Usage:

    pymodbus_server.py tcp HOST PORT
    pymodbus_server.py rtu DEVICE
"""
import struct
import sys

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)


def furnace():
    pv = struct.unpack(">HH", struct.pack(">f", 21.5))
    uptime = 0x00010002
    return ModbusSlaveContext(
        zero_mode=True,
        hr=ModbusSequentialDataBlock(0, [250, 0, 0, 5000, 0, 12500]),
        ir=ModbusSequentialDataBlock(0, [215, 250, 123, 0, pv[0], pv[1],
                                         uptime & 0xFFFF, uptime >> 16, 4]),
        co=ModbusSequentialDataBlock(0, [0]),
        di=ModbusSequentialDataBlock(0, [0]),
    )


def dio():
    return ModbusSlaveContext(
        zero_mode=True,
        co=ModbusSequentialDataBlock(0, [0] * 7),
        di=ModbusSequentialDataBlock(0, [1, 0, 1]),
        hr=ModbusSequentialDataBlock(0, [0]),
        ir=ModbusSequentialDataBlock(0, [0]),
    )


def main():
    ctx = ModbusServerContext(slaves={1: furnace(), 2: dio()}, single=False)
    if sys.argv[1] == "tcp":
        from pymodbus.server import StartTcpServer
        StartTcpServer(context=ctx, address=(sys.argv[2], int(sys.argv[3])))
    else:
        from pymodbus.framer.rtu_framer import ModbusRtuFramer
        from pymodbus.server import StartSerialServer
        # pyserial refuses even parity on a pty (EINVAL), and a pty ignores
        # line settings anyway: 19200 8N1 here, 8E1 on the Go side.
        StartSerialServer(context=ctx, framer=ModbusRtuFramer, port=sys.argv[2],
                          baudrate=19200, bytesize=8, parity="N", stopbits=1,
                          timeout=0.05)


if __name__ == "__main__":
    main()
