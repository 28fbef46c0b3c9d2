package modbussim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// CRC16 is the CRC-16/MODBUS of b (poly 0xA001 reflected, init 0xFFFF). On the
// wire it goes low byte first.
func CRC16(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range b {
		crc ^= uint16(c)
		for i := 0; i < 8; i++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

// ErrCRC: an RTU frame whose CRC does not match.
var ErrCRC = errors.New("modbussim: bad CRC")

// RTUFrameLen returns the length of the request frame starting at b[0]
// (unit, function code, data, CRC) as far as the function code and byte count
// tell it: n > 0 the frame length; 0 more bytes are needed to tell; -1 the
// function code does not tell (the end is found from a silence).
func RTUFrameLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case FCReadCoils, FCReadDiscreteInputs, FCReadHolding, FCReadInput, FCWriteSingleCoil, FCWriteSingleReg:
		return 8
	case FCWriteMultipleCoils, FCWriteMultipleRegs:
		if len(b) < 7 {
			return 0
		}
		return 9 + int(b[6])
	}
	return -1
}

// ParseRTUFrame checks a complete RTU frame and returns its unit id and PDU
// (a sub-slice of b).
func ParseRTUFrame(b []byte) (byte, []byte, error) {
	if len(b) < 4 {
		return 0, nil, ErrShortFrame
	}
	n := len(b) - 2
	if got, want := uint16(b[n])|uint16(b[n+1])<<8, CRC16(b[:n]); got != want {
		return b[0], nil, fmt.Errorf("%w: got %04x want %04x", ErrCRC, got, want)
	}
	return b[0], b[1:n], nil
}

// Line is the slave's side of an RTU line; *ptyline.Line satisfies it. When
// the line also has a Path() string method (the client's device path, as
// ptyline has), Close wakes a read blocked on it by writing one byte from the
// client side, since a pty master may be in blocking mode and ignore
// deadlines.
type Line interface {
	io.ReadWriter
}

// RTUOpts configures an RTUSlave.
type RTUOpts struct {
	// Silence ends a frame whose length the function code does not tell, and
	// resynchronises after a bad frame (default 20 ms).
	Silence time.Duration
	// Logger (default: discard).
	Logger *slog.Logger
	// CharTime is one character's time on the emulated line (11 bits at
	// the line's baud rate for 8E1 or 8N2; 0: none, a pty's speed). With it
	// the slave answers as late as a real line would let it: a frame is
	// taken off the line when the previous exchange has left it, its
	// bytes take len × CharTime to arrive, the slave turns round in the
	// 3.5-character silence and its reply takes len × CharTime, before
	// the next frame may start after another silence. A pty ignores baud
	// rate, so without it a bus of several slaves looks many times faster
	// than the RS-485 line it stands for.
	CharTime time.Duration
}

// silenceChars is the Modbus RTU silence between frames, in characters
// (3.5; the spec fixes it at 1.75 ms above 19200 baud, which an emulation
// of such a line may ignore).
const silenceChars = 3.5

// silence is the RTU silence on a line of character time ct.
func silence(ct time.Duration) time.Duration { return time.Duration(silenceChars * float64(ct)) }

// LineCharTime is the CharTime of a line at baud bits per second whose
// characters are bits long (start, data, parity and stop bits: 11 for
// 8E1), 0 for a baud rate of 0.
func LineCharTime(baud, bits int) time.Duration {
	if baud <= 0 {
		return 0
	}
	return time.Duration(bits) * time.Second / time.Duration(baud)
}

// RTUSlave serves units 1 and 2 on one RTU line: the furnace and the I/O
// module, or on a rig with several heated zones (plant.Zones) the zones'
// controllers, zone i at unit i + 1, as that many slaves sharing an RS-485
// line: one frame at a time, each answered only by its address.
type RTUSlave struct {
	p    *plant.Plant
	h    *Handler
	line Line
	opts RTUOpts

	// lineFree and replyAt are the emulated line's clock (opts.CharTime):
	// when it is next free, and when the frame being executed has arrived
	// and the slave's silence has passed. Only loop's goroutine uses them.
	lineFree, replyAt time.Time

	stopped atomic.Bool
	stop    chan struct{}
	chunks  chan []byte
	readErr chan error
	wg      sync.WaitGroup
	once    sync.Once
}

// ServeRTU starts an RTU slave on line in goroutines owned by the slave. The
// line stays the caller's: close it after Close.
func ServeRTU(p *plant.Plant, line Line, opts RTUOpts) *RTUSlave {
	if opts.Silence <= 0 {
		opts.Silence = 20 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &RTUSlave{p: p, h: NewHandler(p), line: line, opts: opts,
		stop: make(chan struct{}), chunks: make(chan []byte, 16), readErr: make(chan error, 1)}
	s.wg.Add(2)
	go s.reader()
	go s.loop()
	return s
}

// Close stops the slave and waits for its goroutines. A line with read
// deadlines (ptyline) has its pending Read ended by one in the past; the
// byte written to its client side is the way for the others. (The byte
// alone once left a Read blocked for good in make ci, a test's rig never
// closing.)
func (s *RTUSlave) Close() error {
	s.once.Do(func() {
		s.stopped.Store(true)
		close(s.stop)
		if dl, ok := s.line.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = dl.SetReadDeadline(time.Now())
		}
		if pl, ok := s.line.(interface{ Path() string }); ok {
			if f, err := os.OpenFile(pl.Path(), os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0); err == nil {
				_, _ = f.Write([]byte{0})
				_ = f.Close()
			}
		}
	})
	s.wg.Wait()
	return nil
}

func (s *RTUSlave) reader() {
	defer s.wg.Done()
	for {
		b := make([]byte, 256)
		n, err := s.line.Read(b)
		if s.stopped.Load() {
			return
		}
		if n > 0 {
			select {
			case s.chunks <- b[:n]:
			case <-s.stop:
				return
			}
		}
		if err != nil {
			s.readErr <- err
			return
		}
	}
}

func (s *RTUSlave) loop() {
	defer s.wg.Done()
	buf := make([]byte, 0, 1024)
	var resp [MaxPDU + 3]byte
	discarding := false
	silence := time.NewTimer(time.Hour)
	silence.Stop()
	for {
		select {
		case <-s.stop:
			return
		case err := <-s.readErr:
			s.opts.Logger.Warn("modbus rtu: read", "err", err)
			return
		case <-silence.C:
			// silence: whatever is buffered is a frame (or garbage)
			if len(buf) > 0 && !discarding {
				s.frame(buf, resp[:0])
			}
			buf = buf[:0]
			discarding = false
			continue
		case c := <-s.chunks:
			silence.Reset(s.opts.Silence)
			if discarding {
				continue
			}
			if len(buf)+len(c) > cap(buf) {
				buf = buf[:0] // runaway garbage: drop it
				discarding = true
				continue
			}
			buf = append(buf, c...)
		}
		for len(buf) > 0 {
			need := RTUFrameLen(buf)
			if need <= 0 || len(buf) < need {
				break
			}
			if !s.frame(buf[:need], resp[:0]) {
				// bad frame: drop everything until the line goes quiet
				buf = buf[:0]
				discarding = true
				break
			}
			buf = buf[:copy(buf, buf[need:])]
		}
	}
}

// frame executes one complete frame; it reports false when the frame is bad.
func (s *RTUSlave) frame(f []byte, resp []byte) bool {
	if ct := s.opts.CharTime; ct > 0 {
		// The frame is on the line once the previous exchange has left it;
		// until a reply goes out, the line is free after its silence.
		start := time.Now()
		if start.Before(s.lineFree) {
			start = s.lineFree
		}
		s.replyAt = start.Add(time.Duration(len(f))*ct + silence(ct))
		s.lineFree = s.replyAt
	}
	unit, pdu, err := ParseRTUFrame(f)
	if err != nil {
		s.opts.Logger.Debug("modbus rtu: dropping frame", "err", err, "len", len(f))
		return false
	}
	if zones := s.p.Zones(); len(zones) > 0 {
		return s.zoneFrame(len(zones), unit, pdu, resp)
	}
	if unit == 0 { // broadcast: writes only, no reply
		switch pdu[0] {
		case FCWriteSingleReg, FCWriteMultipleRegs:
			s.h.Handle("rtu", UnitFurnace, pdu, resp)
		case FCWriteSingleCoil, FCWriteMultipleCoils:
			s.h.Handle("rtu", UnitDIO, pdu, resp)
		}
		return true
	}
	dev := DeviceForUnit(unit)
	if dev == "" {
		return true // another unit on the bus
	}
	out := append(resp, unit)
	s.reply(dev, s.h.Handle("rtu", unit, pdu, out))
	return true
}

// zoneFrame executes a good frame on the zones' line of n zones: unit
// 1..n is zone unit − 1's controller; a broadcast register write is
// executed by every controller, unanswered; a frame for any other address
// is another slave's and gets nothing.
func (s *RTUSlave) zoneFrame(n int, unit byte, pdu, resp []byte) bool {
	if unit == 0 {
		if pdu[0] == FCWriteSingleReg || pdu[0] == FCWriteMultipleRegs {
			for i := 0; i < n; i++ {
				s.h.HandleZone("rtu", i, pdu, resp)
			}
		}
		return true
	}
	i := int(unit) - 1
	if i >= n {
		return true // another unit on the bus
	}
	s.reply(s.p.ZoneDevice(i), s.h.HandleZone("rtu", i, pdu, append(resp, unit)))
	return true
}

// reply sends response out (unit and PDU) from device dev with its CRC,
// unless dev is silent; a corrupt dev's CRC is wrong.
func (s *RTUSlave) reply(dev string, out []byte) {
	if s.p.FaultActive(plant.FaultSilent, dev) {
		return
	}
	crc := CRC16(out)
	if s.p.FaultActive(plant.FaultCorrupt, dev) {
		crc ^= 0xA5A5
	}
	out = append(out, byte(crc), byte(crc>>8))
	if ct := s.opts.CharTime; ct > 0 {
		// The reply is read whole when its last character has arrived.
		done := s.replyAt.Add(time.Duration(len(out)) * ct)
		if d := time.Until(done); d > 0 {
			select {
			case <-time.After(d):
			case <-s.stop:
				return
			}
		}
		s.lineFree = done.Add(silence(ct))
	}
	if _, err := s.line.Write(out); err != nil {
		s.opts.Logger.Warn("modbus rtu: write", "err", err)
	}
}
