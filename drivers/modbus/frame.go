package modbus

// RTU framing: CRC-16/MODBUS and the length of a reply, computed from the bytes
// received so far. These are pure functions so that they can be fuzzed.

const (
	rtuMinReply  = 5   // unit, function, exception code, CRC
	rtuMaxFrame  = 256 // unit + PDU (253) + CRC
	tcpHeaderLen = 7   // MBAP header: transaction, protocol, length, unit
	tcpMaxPDU    = 253
)

// CRC16 returns the CRC-16/MODBUS of b (polynomial 0xA001 reflected, initial
// value 0xFFFF). On the wire the low byte goes first.
func CRC16(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range b {
		crc ^= uint16(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

// AppendCRC appends the CRC of frame to it, low byte first.
func AppendCRC(frame []byte) []byte {
	crc := CRC16(frame)
	return append(frame, byte(crc), byte(crc>>8))
}

// RTUReplyLength returns the total length of the RTU reply that begins with
// partial (unit id, function code, ...), CRC included. It returns 0 when more
// bytes are needed to tell, and -1 when the length cannot be known from the
// function code (the caller then waits for a silence). An impossible length (a
// byte count that would overflow a frame) yields an error wrapping
// device.ErrFrame.
func RTUReplyLength(partial []byte) (int, error) {
	if len(partial) < 2 {
		return 0, nil
	}
	fc := partial[1]
	if fc&0x80 != 0 {
		return rtuMinReply, nil
	}
	switch fc {
	case 0x01, 0x02, 0x03, 0x04, 0x0C, 0x11, 0x14, 0x15, 0x17:
		// unit, fc, byte count, data, CRC
		if len(partial) < 3 {
			return 0, nil
		}
		n := 3 + int(partial[2]) + 2
		if n > rtuMaxFrame {
			return 0, frameError("byte count %d overflows an RTU frame", partial[2])
		}
		return n, nil
	case 0x05, 0x06, 0x08, 0x0B, 0x0F, 0x10:
		return 8, nil
	case 0x07:
		return 5, nil
	case 0x16:
		return 10, nil
	case 0x18:
		// unit, fc, byte count (2 bytes), data, CRC
		if len(partial) < 4 {
			return 0, nil
		}
		n := 4 + (int(partial[2])<<8 | int(partial[3])) + 2
		if n > rtuMaxFrame {
			return 0, frameError("FIFO byte count overflows an RTU frame")
		}
		return n, nil
	}
	return -1, nil
}

// checkRTUReply validates a complete RTU reply against its request: length,
// CRC, unit id and function code (or its exception form). It does not interpret
// the PDU.
// lateRTUReply reports whether frame, a complete reply with a valid CRC,
// answers a request other than req: another unit, or another function
// (neither req's nor its exception). On a line with one master that is a
// reply to an earlier request that came after its timeout and after the
// drain; the reader skips it and reads on. A late reply to the same unit
// and function cannot be told from the answer (doc.go).
func lateRTUReply(req, frame []byte) bool {
	if len(req) < 2 || len(frame) < 4 {
		return false
	}
	if CRC16(frame[:len(frame)-2]) != uint16(frame[len(frame)-2])|uint16(frame[len(frame)-1])<<8 {
		return false
	}
	return frame[0] != req[0] || (frame[1] != req[1] && frame[1] != req[1]|0x80)
}

func checkRTUReply(req, reply []byte) error {
	if len(reply) < 4 {
		return frameError("RTU reply of %d bytes is too short", len(reply))
	}
	body := reply[:len(reply)-2]
	got := uint16(reply[len(reply)-2]) | uint16(reply[len(reply)-1])<<8
	if want := CRC16(body); got != want {
		return checksumError("RTU reply CRC %04x, computed %04x (% x)", got, want, reply)
	}
	if len(req) >= 2 {
		if reply[0] != req[0] {
			return frameError("RTU reply from unit %d to a request for unit %d", reply[0], req[0])
		}
		if reply[1] != req[1] && reply[1] != req[1]|0x80 {
			return frameError("RTU reply function %#02x to a request with function %#02x", reply[1], req[1])
		}
	}
	if n, err := RTUReplyLength(reply); err != nil {
		return err
	} else if n > 0 && n != len(reply) {
		return frameError("RTU reply of %d bytes, its header says %d", len(reply), n)
	}
	return nil
}
