package modbus

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"

	"hcp-edge/device"
)

// TestReadFrame: one MBAP frame whatever the reads deliver (all at once,
// byte by byte, with a late reply behind it), and the errors of a short or
// impossible frame.
func TestReadFrame(t *testing.T) {
	// Transaction 7, protocol 0, length 5: unit 1, FC 03, 2 bytes, 0x1234.
	frame := []byte{0, 7, 0, 0, 0, 5, 1, 3, 2, 0x12, 0x34}
	late := []byte{0, 6, 0, 0, 0, 5, 1, 3, 2, 0, 0}
	tests := []struct {
		name    string
		r       io.Reader
		wantErr error
	}{
		{"whole", bytes.NewReader(frame), nil},
		{"byte by byte", iotest.OneByteReader(bytes.NewReader(frame)), nil},
		{"half reads", iotest.HalfReader(bytes.NewReader(frame)), nil},
		{"with EOF on the last read", iotest.DataErrReader(bytes.NewReader(frame)), nil},
		{"a late reply behind it", bytes.NewReader(append(slices.Clone(frame), late...)), nil},
		{"cut in the header", bytes.NewReader(frame[:4]), io.ErrUnexpectedEOF},
		{"cut in the PDU", bytes.NewReader(frame[:9]), io.ErrUnexpectedEOF},
		{"nothing", bytes.NewReader(nil), io.EOF},
		{"protocol id 1", bytes.NewReader([]byte{0, 7, 0, 1, 0, 5, 1, 3, 2, 0, 0}), device.ErrFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf [tcpHeaderLen + tcpMaxPDU]byte
			n, err := readFrame(tt.r, &buf)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(buf[:n], frame) {
				t.Fatalf("got % x, %v; want % x", buf[:n], err, frame)
			}
		})
	}
}
