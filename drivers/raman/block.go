package raman

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"strconv"
	"strings"

	"hcp-edge/device"
)

// Error codes of the spectrometer's "ERR <n> <message>" replies.
const (
	CodeUnknownCommand = 1
	CodeBadArgument    = 2
	CodeBusy           = 3
	CodeAborted        = 4
)

// Error is an "ERR <n> <message>" reply. It wraps device.ErrRejected.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("spectrometer error %d: %s", e.Code, e.Message)
}

// Unwrap makes errors.Is(err, device.ErrRejected) hold.
func (e *Error) Unwrap() error { return device.ErrRejected }

// parseErr parses an "ERR <n> <message>" line; ok is false when line is not one.
func parseErr(line string) (e *Error, ok bool, err error) {
	if line != "ERR" && !strings.HasPrefix(line, "ERR ") {
		return nil, false, nil
	}
	rest := strings.TrimPrefix(line, "ERR")
	rest = strings.TrimPrefix(rest, " ")
	codeStr, msg, _ := strings.Cut(rest, " ")
	code, cerr := strconv.Atoi(codeStr)
	if cerr != nil || code < 0 || code > 999 || !isDigits(codeStr) {
		return nil, true, fmt.Errorf("error reply %q: %w", truncate(line), device.ErrFrame)
	}
	return &Error{Code: code, Message: msg}, true, nil
}

// block parses one data block line by line:
//
//	DATA <n>
//	<shift> <counts>     (n lines)
//	END <crc32 hex>
type block struct {
	max     int
	n       int // -1 until the header is read
	shift   []float64
	counts  []float64
	crc     hash.Hash32
	lineErr error // first malformed data line, reported if the CRC is good
	done    bool
}

func newBlock(maxPoints int) *block {
	return &block{max: maxPoints, n: -1, crc: crc32.NewIEEE()}
}

// feed takes one line without its CR LF. It returns done once END has been
// read and verified; an error is final.
func (b *block) feed(line []byte) (done bool, err error) {
	s := string(line)
	switch {
	case b.done:
		return true, fmt.Errorf("line %q after END: %w", truncate(s), device.ErrFrame)
	case b.n < 0:
		if e, ok, err := parseErr(s); ok {
			if err != nil {
				return false, err
			}
			return false, e
		}
		nStr, ok := strings.CutPrefix(s, "DATA ")
		n, err := strconv.Atoi(nStr)
		if !ok || err != nil || !isDigits(nStr) || n < 1 {
			return false, fmt.Errorf("header %q: want DATA <n>: %w", truncate(s), device.ErrFrame)
		}
		if n > b.max {
			return false, fmt.Errorf("header %q: more than %d points: %w", s, b.max, device.ErrFrame)
		}
		b.n = n
		b.shift = make([]float64, 0, n)
		b.counts = make([]float64, 0, n)
		return false, nil
	case len(b.shift) < b.n:
		if strings.HasPrefix(s, "END") {
			return false, fmt.Errorf("block ended after %d of %d points: %w", len(b.shift), b.n, device.ErrFrame)
		}
		b.crc.Write(line)
		b.crc.Write([]byte("\r\n"))
		shift, counts, err := parsePoint(s)
		if err == nil && len(b.shift) > 0 && shift <= b.shift[len(b.shift)-1] {
			err = fmt.Errorf("point %d: shift %v not above %v", len(b.shift)+1, shift, b.shift[len(b.shift)-1])
		}
		if err != nil && b.lineErr == nil {
			b.lineErr = fmt.Errorf("point %d %q: %v: %w", len(b.shift)+1, truncate(s), err, device.ErrFrame)
		}
		b.shift = append(b.shift, shift)
		b.counts = append(b.counts, counts)
		return false, nil
	}
	hex, ok := strings.CutPrefix(s, "END ")
	if !ok || len(hex) != 8 || !isLowerHex(hex) {
		return false, fmt.Errorf("line %q after %d points: want END <crc>: %w", truncate(s), b.n, device.ErrFrame)
	}
	want, _ := strconv.ParseUint(hex, 16, 32)
	if got := b.crc.Sum32(); got != uint32(want) {
		return false, fmt.Errorf("CRC-32 of the data is %08x, END says %s: %w", got, hex, device.ErrChecksum)
	}
	if b.lineErr != nil {
		return false, b.lineErr
	}
	b.done = true
	return true, nil
}

// parsePoint parses "<shift> <counts>": an optionally negative number with one
// decimal, a space, an unsigned integer.
func parsePoint(s string) (shift, counts float64, err error) {
	a, c, ok := strings.Cut(s, " ")
	if !ok {
		return 0, 0, errors.New("want <shift> <counts>")
	}
	digits := strings.TrimPrefix(a, "-")
	ip, fp, ok := strings.Cut(digits, ".")
	if !ok || len(ip) == 0 || len(ip) > 6 || len(fp) != 1 || !isDigits(ip) || !isDigits(fp) {
		return 0, 0, fmt.Errorf("shift %q: want one decimal", a)
	}
	shift, err = strconv.ParseFloat(a, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("shift %q: %v", a, err)
	}
	if len(c) == 0 || len(c) > 19 || !isDigits(c) {
		return 0, 0, fmt.Errorf("counts %q: want an unsigned integer", c)
	}
	n, err := strconv.ParseUint(c, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("counts %q: %v", c, err)
	}
	return shift, float64(n), nil
}

// ParseBlock parses a complete data block (every line ending with CR LF, as
// the spectrometer sends it) and returns the spectrum's shifts and counts. An
// "ERR" reply is an *Error; a bad CRC is device.ErrChecksum; anything else
// malformed (wrong count, shifts not increasing, bad numbers, bytes after END)
// is device.ErrFrame.
func ParseBlock(data []byte, maxPoints int) (shift, counts []float64, err error) {
	b := newBlock(maxPoints)
	rest := data
	for len(rest) > 0 {
		i := strings.Index(string(rest), "\r\n")
		if i < 0 {
			return nil, nil, fmt.Errorf("trailing %q without CR LF: %w", truncate(string(rest)), device.ErrFrame)
		}
		done, err := b.feed(rest[:i])
		if err != nil {
			return nil, nil, err
		}
		rest = rest[i+2:]
		if done {
			if len(rest) > 0 {
				return nil, nil, fmt.Errorf("%d bytes after END: %w", len(rest), device.ErrFrame)
			}
			return b.shift, b.counts, nil
		}
	}
	return nil, nil, fmt.Errorf("block incomplete: %w", device.ErrFrame)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
