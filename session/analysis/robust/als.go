package robust

import "math"

// als returns the asymmetric least squares baseline of y (Eilers and
// Boelens 2005) with smoothness lambda and asymmetry p, over niter
// reweightings; points with mask true weigh nothing. The system
// (W + λDᵀD) z = W y is pentadiagonal and solved by a banded LDLᵀ
// decomposition (written here: one banded solve does not justify a linear
// algebra library in an armv7 binary).
func als(y []float64, mask []bool, lambda, p float64, niter int) []float64 {
	n := len(y)
	z := make([]float64, n)
	if n < 5 {
		copy(z, y)
		return z
	}
	w := make([]float64, n)
	for i := range w {
		if !mask[i] {
			w[i] = 1
		}
	}
	// DᵀD for the second difference: bands d0, d1, d2.
	d0, d1, d2 := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n-2; i++ {
		// row (1, −2, 1) at i, i+1, i+2
		c := [3]float64{1, -2, 1}
		for a := 0; a < 3; a++ {
			for b := a; b < 3; b++ {
				v := lambda * c[a] * c[b]
				switch b - a {
				case 0:
					d0[i+a] += v
				case 1:
					d1[i+a] += v
				case 2:
					d2[i+a] += v
				}
			}
		}
	}
	a0, a1, a2 := make([]float64, n), make([]float64, n), make([]float64, n)
	rhs := make([]float64, n)
	for it := 0; it < niter; it++ {
		for i := range y {
			a0[i], a1[i], a2[i] = d0[i]+w[i], d1[i], d2[i]
			rhs[i] = w[i] * y[i]
		}
		solvePenta(a0, a1, a2, rhs, z)
		for i := range y {
			if mask[i] {
				continue
			}
			if y[i] > z[i] {
				w[i] = p
			} else {
				w[i] = 1 - p
			}
		}
	}
	return z
}

// solvePenta solves the symmetric pentadiagonal system with diagonal a0,
// first and second superdiagonals a1, a2 (overwritten) for b into x, by
// banded LDLᵀ.
func solvePenta(a0, a1, a2, b, x []float64) {
	n := len(a0)
	// d: diagonal of D; l1, l2: sub-diagonals of L.
	d := make([]float64, n)
	l1 := make([]float64, n)
	l2 := make([]float64, n)
	for i := 0; i < n; i++ {
		v := a0[i]
		if i >= 1 {
			v -= l1[i-1] * l1[i-1] * d[i-1]
		}
		if i >= 2 {
			v -= l2[i-2] * l2[i-2] * d[i-2]
		}
		if !(math.Abs(v) > 1e-300) {
			v = 1e-300
		}
		d[i] = v
		if i+1 < n {
			u := a1[i]
			if i >= 1 {
				u -= l2[i-1] * l1[i-1] * d[i-1]
			}
			l1[i] = u / d[i]
		}
		if i+2 < n {
			l2[i] = a2[i] / d[i]
		}
	}
	// L y = b
	for i := 0; i < n; i++ {
		v := b[i]
		if i >= 1 {
			v -= l1[i-1] * x[i-1]
		}
		if i >= 2 {
			v -= l2[i-2] * x[i-2]
		}
		x[i] = v
	}
	for i := range x {
		x[i] /= d[i]
	}
	// Lᵀ x = y
	for i := n - 1; i >= 0; i-- {
		if i+1 < n {
			x[i] -= l1[i] * x[i+1]
		}
		if i+2 < n {
			x[i] -= l2[i] * x[i+2]
		}
	}
}
