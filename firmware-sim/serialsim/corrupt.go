package serialsim

import "math/rand/v2"

// garbage holds the characters that replace digits in a corrupted reply: none
// is a digit, a sign, a point, a letter E, a space or a line terminator, so a
// client that validates the format notices.
const garbage = "#%&*?@!~$^"

// corrupt returns a copy of msg with some characters garbled, leaving the
// trailing CR/LF alone so the client still finds the end of the line. Each digit
// is replaced with probability 1/3, and at least one character always changes:
// a digit when there is one, any other character otherwise.
func corrupt(msg []byte, rng *rand.Rand) []byte {
	out := append([]byte(nil), msg...)
	end := len(out)
	for end > 0 && (out[end-1] == '\r' || out[end-1] == '\n') {
		end--
	}
	var digits []int
	for i := 0; i < end; i++ {
		if out[i] >= '0' && out[i] <= '9' {
			digits = append(digits, i)
		}
	}
	if len(digits) == 0 {
		if end == 0 {
			return out
		}
		i := rng.IntN(end)
		out[i] = pickGarbage(out[i], rng)
		return out
	}
	changed := false
	for _, i := range digits {
		if rng.IntN(3) == 0 {
			out[i] = pickGarbage(out[i], rng)
			changed = true
		}
	}
	if !changed {
		i := digits[rng.IntN(len(digits))]
		out[i] = pickGarbage(out[i], rng)
	}
	return out
}

// pickGarbage returns a garbage character different from c.
func pickGarbage(c byte, rng *rand.Rand) byte {
	for {
		g := garbage[rng.IntN(len(garbage))]
		if g != c {
			return g
		}
	}
}

// newRand returns the instrument's noise and corruption source.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
