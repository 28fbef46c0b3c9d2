package modbus

import (
	"context"
	"errors"
	"testing"

	"hcp-edge/device"
)

func FuzzRTUReplyLength(f *testing.F) {
	f.Add([]byte{0x01, 0x03, 0x02, 0x00, 0xFA, 0x38, 0x07})
	f.Add([]byte{0x01, 0x83, 0x02, 0xC0, 0xF1})
	f.Add([]byte{0x02, 0x05, 0x00, 0x06, 0xFF, 0x00})
	f.Add([]byte{0x01, 0x18, 0x00, 0xFF})
	f.Add([]byte{0x01, 0x03, 0xFF})
	f.Add([]byte{0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := RTUReplyLength(b)
		if err != nil {
			if !errors.Is(err, device.ErrFrame) {
				t.Fatalf("error %v does not wrap ErrFrame", err)
			}
			return
		}
		if n > rtuMaxFrame || (n > 0 && n < 5) || n < -1 {
			t.Fatalf("length %d for % x", n, b)
		}
	})
}

func FuzzCheckRTUReply(f *testing.F) {
	req := AppendCRC([]byte{0x01, 0x03, 0x00, 0x00, 0x00, 0x01})
	f.Add(req, AppendCRC([]byte{0x01, 0x03, 0x02, 0x00, 0xFA}))
	f.Add(req, AppendCRC([]byte{0x01, 0x83, 0x02}))
	f.Add(req, []byte{0x01, 0x83, 0x02, 0x00, 0x00})
	f.Add(req, AppendCRC([]byte{0x02, 0x03, 0x02, 0x00, 0xFA}))
	f.Fuzz(func(t *testing.T, req, reply []byte) {
		err := checkRTUReply(req, reply)
		if err != nil && !errors.Is(err, device.ErrFrame) && !errors.Is(err, device.ErrChecksum) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzMBAPLength(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 6, 1})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 1})
	f.Add([]byte{0, 1, 0, 1, 0xFF, 0xFF, 1})
	f.Fuzz(func(t *testing.T, hdr []byte) {
		n, err := MBAPLength(hdr)
		if err != nil {
			if !errors.Is(err, device.ErrFrame) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if n < 8 || n > 260 {
			t.Fatalf("length %d", n)
		}
	})
}

// FuzzBusReply feeds arbitrary reply PDUs through goburrow's client and the
// Bus: never a panic, always a typed error or a well-sized result.
func FuzzBusReply(f *testing.F) {
	f.Add(byte(3), []byte{0x03, 0x02, 0x00, 0xFA})
	f.Add(byte(1), []byte{0x01, 0x01, 0x05})
	f.Add(byte(5), []byte{0x05, 0x00, 0x00, 0xFF, 0x00})
	f.Add(byte(3), []byte{0x83, 0x02})
	f.Add(byte(3), []byte{0x83})
	f.Add(byte(4), []byte{0x04})
	f.Add(byte(16), []byte{0x10, 0x00, 0x00, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, op byte, reply []byte) {
		if len(reply) == 0 || len(reply) > 253 {
			return
		}
		h := HandlerFunc(func(context.Context, byte, PDU) (PDU, error) {
			return PDU{Function: reply[0], Data: reply[1:]}, nil
		})
		o := DefaultOpts()
		o.Retries = 0
		b, err := NewInMemory(h, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		switch op % 6 {
		case 0:
			r, e := b.ReadHoldingRegisters(ctx, 1, 0, 1)
			if e == nil && len(r) != 1 {
				t.Fatalf("%d registers", len(r))
			}
			err = e
		case 1:
			r, e := b.ReadCoils(ctx, 1, 0, 3)
			if e == nil && len(r) != 3 {
				t.Fatalf("%d coils", len(r))
			}
			err = e
		case 2:
			err = b.WriteSingleCoil(ctx, 1, 0, true)
		case 3:
			err = b.WriteSingleRegister(ctx, 1, 0, 0xFA)
		case 4:
			err = b.WriteMultipleRegisters(ctx, 1, 0, []uint16{1})
		case 5:
			_, err = b.ReadInputRegisters(ctx, 1, 0, 2)
		}
		if err != nil && !errors.Is(err, device.ErrFrame) && !errors.Is(err, device.ErrRejected) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
