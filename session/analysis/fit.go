package analysis

import (
	"errors"
	"math"
)

// errSingular: the normal equations could not be solved.
var errSingular = errors.New("analysis: singular normal matrix")

// nParams is the number of parameters of the two-Lorentzian model:
// b0, b1, A1, x1, γ1, A2, x2, γ2.
const nParams = 8

// model is two Lorentzians on a linear baseline centred at xc.
type model struct{ xc float64 }

func lorentz(x, x0, g float64) float64 {
	d := (x - x0) / g
	return 1 / (1 + d*d)
}

// eval returns the model at x and, when grad is not nil, its gradient.
func (m model) eval(p *[nParams]float64, x float64, grad *[nParams]float64) float64 {
	y := p[0] + p[1]*(x-m.xc)
	if grad != nil {
		grad[0] = 1
		grad[1] = x - m.xc
	}
	for k := 0; k < 2; k++ {
		a, x0, g := p[2+3*k], p[3+3*k], p[4+3*k]
		d := (x - x0) / g
		l := 1 / (1 + d*d)
		y += a * l
		if grad != nil {
			// ∂/∂x0 (A l) = A l² 2d/g ; ∂/∂g = A l² 2d²/g
			grad[2+3*k] = l
			grad[3+3*k] = a * l * l * 2 * d / g
			grad[4+3*k] = a * l * l * 2 * d * d / g
		}
	}
	return y
}

// fitResult is a converged fit.
type fitResult struct {
	p    [nParams]float64
	cov  [nParams][nParams]float64
	ssr  float64
	iter int
}

// lmFit fits the model to (x, y) from p0 by Levenberg–Marquardt. bounds
// keeps the widths positive and the positions inside [lo, hi] per peak.
func lmFit(m model, x, y []float64, p0 [nParams]float64, lo, hi [2]float64) (fitResult, error) {
	n := len(x)
	if n <= nParams {
		return fitResult{}, errors.New("analysis: too few points to fit")
	}
	p := p0
	ssr := func(p *[nParams]float64) float64 {
		s := 0.0
		for i := range x {
			r := y[i] - m.eval(p, x[i], nil)
			s += r * r
		}
		return s
	}
	valid := func(p *[nParams]float64) bool {
		for k := 0; k < 2; k++ {
			x0, g := p[3+3*k], p[4+3*k]
			if !(g > 0.05 && g < 30) || !(x0 >= lo[k] && x0 <= hi[k]) {
				return false
			}
		}
		for _, v := range p {
			if !finite(v) {
				return false
			}
		}
		return true
	}
	cur := ssr(&p)
	if !finite(cur) {
		return fitResult{}, errors.New("analysis: initial residual not finite")
	}
	lambda := 1e-3
	var jtj [nParams][nParams]float64
	var jtr [nParams]float64
	var grad [nParams]float64
	iter := 0
	for ; iter < 200; iter++ {
		jtj = [nParams][nParams]float64{}
		jtr = [nParams]float64{}
		for i := range x {
			r := y[i] - m.eval(&p, x[i], &grad)
			for a := 0; a < nParams; a++ {
				jtr[a] += grad[a] * r
				for b := 0; b <= a; b++ {
					jtj[a][b] += grad[a] * grad[b]
				}
			}
		}
		for a := 0; a < nParams; a++ {
			for b := 0; b < a; b++ {
				jtj[b][a] = jtj[a][b]
			}
		}
		improved := false
		for try := 0; try < 30; try++ {
			aug := jtj
			for a := 0; a < nParams; a++ {
				aug[a][a] += lambda * math.Max(jtj[a][a], 1e-12)
			}
			delta, err := solve(aug, jtr)
			if err != nil {
				lambda *= 10
				continue
			}
			var q [nParams]float64
			for a := range q {
				q[a] = p[a] + delta[a]
			}
			if valid(&q) {
				if s := ssr(&q); s < cur {
					rel := (cur - s) / math.Max(cur, 1e-300)
					p, cur = q, s
					lambda = math.Max(lambda/10, 1e-12)
					improved = true
					if rel < 1e-10 {
						iter = 1000 // converged
					}
					break
				}
			}
			lambda *= 10
			if lambda > 1e12 {
				break
			}
		}
		if !improved || iter >= 1000 {
			break
		}
	}
	// Covariance at the solution.
	jtj = [nParams][nParams]float64{}
	for i := range x {
		m.eval(&p, x[i], &grad)
		for a := 0; a < nParams; a++ {
			for b := 0; b < nParams; b++ {
				jtj[a][b] += grad[a] * grad[b]
			}
		}
	}
	inv, err := invert(jtj)
	if err != nil {
		return fitResult{}, err
	}
	s2 := cur / float64(n-nParams)
	res := fitResult{p: p, ssr: cur, iter: iter}
	for a := range inv {
		for b := range inv[a] {
			res.cov[a][b] = s2 * inv[a][b]
		}
	}
	return res, nil
}

// solve solves A x = b by Gaussian elimination with partial pivoting, on
// a copy scaled by the diagonal for conditioning.
func solve(a [nParams][nParams]float64, b [nParams]float64) ([nParams]float64, error) {
	var x [nParams]float64
	// Jacobi scaling.
	var s [nParams]float64
	for i := range s {
		if !(a[i][i] > 0) || !finite(a[i][i]) {
			return x, errSingular
		}
		s[i] = 1 / math.Sqrt(a[i][i])
	}
	for i := range a {
		for j := range a[i] {
			a[i][j] *= s[i] * s[j]
		}
		b[i] *= s[i]
	}
	for c := 0; c < nParams; c++ {
		piv := c
		for r := c + 1; r < nParams; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		if math.Abs(a[piv][c]) < 1e-14 {
			return x, errSingular
		}
		a[c], a[piv] = a[piv], a[c]
		b[c], b[piv] = b[piv], b[c]
		for r := c + 1; r < nParams; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < nParams; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	for r := nParams - 1; r >= 0; r-- {
		v := b[r]
		for k := r + 1; k < nParams; k++ {
			v -= a[r][k] * x[k]
		}
		x[r] = v / a[r][r]
	}
	for i := range x {
		x[i] *= s[i]
		if !finite(x[i]) {
			return x, errSingular
		}
	}
	return x, nil
}

// invert inverts a symmetric positive definite matrix column by column.
func invert(a [nParams][nParams]float64) ([nParams][nParams]float64, error) {
	var inv [nParams][nParams]float64
	for c := 0; c < nParams; c++ {
		var e [nParams]float64
		e[c] = 1
		col, err := solve(a, e)
		if err != nil {
			return inv, err
		}
		for r := 0; r < nParams; r++ {
			inv[r][c] = col[r]
		}
	}
	return inv, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
