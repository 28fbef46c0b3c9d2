package modbus_test

import (
	"errors"
	"math"
	"testing"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
)

func TestRegisterSpecDecode(t *testing.T) {
	tests := []struct {
		name  string
		spec  modbus.RegisterSpec
		words []uint16
		want  float64
	}{
		{"int16 scaled", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Int16, Scale: 0.1}, []uint16{215}, 21.5},
		{"int16 negative", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Int16, Scale: 0.1}, []uint16{0xFFF6}, -1},
		{"uint16 offset", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Uint16, Offset: -10}, []uint16{65535}, 65525},
		{"uint16 little endian", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Uint16, ByteOrder: modbus.LittleEndian}, []uint16{0x3412}, 0x1234},
		{"float32 ABCD", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Float32}, []uint16{0x41AC, 0x0000}, 21.5},
		{"float32 CDAB", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Float32, WordOrder: modbus.LowWordFirst}, []uint16{0x0000, 0x41AC}, 21.5},
		{"uint32 CDAB", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Uint32, WordOrder: modbus.LowWordFirst}, []uint16{0x0002, 0x0001}, 0x00010002},
		{"int32 ABCD negative", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Int32}, []uint16{0xFFFF, 0xFFFE}, -2},
		{"uint32 DCBA", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Uint32, ByteOrder: modbus.LittleEndian, WordOrder: modbus.LowWordFirst}, []uint16{0x0403, 0x0201}, 0x01020304},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := tt.spec.Decode(tt.words)
			if err != nil || math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("Decode = %v, %v; want %v", got, err, tt.want)
			}
			enc, err := tt.spec.Encode(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			for i := range enc {
				if enc[i] != tt.words[i] {
					t.Fatalf("Encode(%v) = %04x, want %04x", tt.want, enc, tt.words)
				}
			}
		})
	}
}

func TestRegisterSpecEncodeRefusesOutOfRange(t *testing.T) {
	tests := []struct {
		name string
		spec modbus.RegisterSpec
		v    float64
	}{
		{"int16 too high", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Int16, Scale: 0.1}, 3276.8},
		{"uint16 negative", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Uint16}, -1},
		{"uint32 too high", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Uint32}, 1 << 32},
		{"NaN", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Float32}, math.NaN()},
		{"Inf", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Int32}, math.Inf(1)},
		{"float32 overflow", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Float32}, 1e39},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.spec.Encode(tt.v); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("Encode(%v) error %v, want ErrOutOfRange", tt.v, err)
			}
		})
	}
}

func TestRegisterSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec modbus.RegisterSpec
		ok   bool
	}{
		{"holding int16", modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Int16}, true},
		{"coil", modbus.RegisterSpec{Table: modbus.Coil, Address: 6}, true},
		{"no table", modbus.RegisterSpec{Type: modbus.Int16}, false},
		{"no type", modbus.RegisterSpec{Table: modbus.Input}, false},
		{"coil int16", modbus.RegisterSpec{Table: modbus.Coil, Type: modbus.Int16}, false},
		{"bad order", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Int32, WordOrder: "middle"}, false},
		{"past the end", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Int32, Address: 65535}, false},
		{"NaN scale", modbus.RegisterSpec{Table: modbus.Input, Type: modbus.Int16, Scale: math.NaN()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestParseOrder(t *testing.T) {
	bo, wo, err := modbus.ParseOrder("cdab")
	if err != nil || bo != modbus.BigEndian || wo != modbus.LowWordFirst {
		t.Fatalf("ParseOrder(cdab) = %v %v %v", bo, wo, err)
	}
	if _, _, err := modbus.ParseOrder("ABDC"); err == nil {
		t.Fatal("ParseOrder(ABDC) accepted")
	}
}

func TestWriteRefusesBeforeSending(t *testing.T) {
	srv := rig()
	b := memBus(t, srv, 0)
	spec := modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Int16, Scale: 0.1}
	if err := b.Write(ctxT(t), 1, spec, 5000); !errors.Is(err, device.ErrOutOfRange) {
		t.Fatalf("error %v, want ErrOutOfRange", err)
	}
	if srv.Requests(6) != 0 {
		t.Fatal("a request was sent")
	}
}
