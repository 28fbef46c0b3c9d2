package robust

import (
	"math"
)

// decomposition is the chosen mixed-layer model.
type decomposition struct {
	cov []Coverage
}

// dominant is the layer count with the most coverage (the thinner on a tie).
func (d decomposition) dominant() int {
	best, frac := 0, -1.0
	for _, c := range d.cov {
		if c.Fraction > frac+1e-12 {
			best, frac = c.Layers, c.Fraction
		}
	}
	return best
}

// The search grid of the decomposition: a common axis offset (cm⁻¹) and a
// common half width at half maximum (cm⁻¹) of every band.
var (
	gridOffsets = []float64{-0.4, -0.2, 0, 0.2, 0.4}
	gridWidths  = []float64{1.6, 1.9, 2.3, 2.8}
)

// nCols is the columns of the full design: constant, slope, then E2g and
// A1g of 1..4 layers.
const nCols = 2 + 8

// decompose models the corrected points (x, y) in the window of table's
// bands as the bands of one layer count or of two neighbouring ones (package
// doc, step 6) and returns the coverage per layer count; ok is false when
// no model has a positive band.
func decompose(table [4][2]float64, x, y []float64, noise float64) (decomposition, bool) {
	lo := table[3][0] - 25
	hi := table[3][1] + 25
	var wx, wy []float64
	for i := range x {
		if x[i] >= lo && x[i] <= hi {
			wx, wy = append(wx, x[i]), append(wy, y[i])
		}
	}
	n := len(wx)
	if n < 30 {
		return decomposition{}, false
	}
	xc := (lo + hi) / 2
	type model struct {
		layers []int // layer counts of the model
		amp    []float64
		cov    [][]float64 // of amp
		ssr    float64
		bic    float64
	}
	var best *model
	var g [nCols][nCols]float64
	var xy [nCols]float64
	yy := 0.0
	for _, v := range wy {
		yy += v * v
	}
	row := make([]float64, nCols)
	for _, off := range gridOffsets {
		for _, w := range gridWidths {
			g, xy = [nCols][nCols]float64{}, [nCols]float64{}
			for i := range wx {
				row[0], row[1] = 1, (wx[i]-xc)/50
				for k := 0; k < 4; k++ {
					row[2+2*k] = lorentz(wx[i], table[k][0]+off, w)
					row[3+2*k] = lorentz(wx[i], table[k][1]+off, w)
				}
				for a := 0; a < nCols; a++ {
					xy[a] += row[a] * wy[i]
					for b := 0; b <= a; b++ {
						g[a][b] += row[a] * row[b]
					}
				}
			}
			for a := 0; a < nCols; a++ {
				for b := 0; b < a; b++ {
					g[b][a] = g[a][b]
				}
			}
			// candidates: one layer count, or two neighbouring ones
			for k := 1; k <= 4; k++ {
				for span := 1; span <= 2 && k+span-1 <= 4; span++ {
					var peak []int
					for l := k; l < k+span; l++ {
						peak = append(peak, 2+2*(l-1), 3+2*(l-1))
					}
					amp, cov, ssr, ok := nnls(&g, &xy, yy, peak)
					if !ok {
						continue
					}
					params := float64(2 + len(peak) + 2)
					bic := float64(n)*math.Log(math.Max(ssr, 1e-300)/float64(n)) + params*math.Log(float64(n))
					if best == nil || bic < best.bic {
						ls := make([]int, 0, span)
						for l := k; l < k+span; l++ {
							ls = append(ls, l)
						}
						s2 := ssr / math.Max(1, float64(n)-params)
						for i := range cov {
							for j := range cov[i] {
								cov[i][j] *= s2
							}
						}
						best = &model{layers: ls, amp: amp, cov: cov, ssr: ssr, bic: bic}
					}
				}
			}
		}
	}
	if best == nil {
		return decomposition{}, false
	}
	// coverage: (E_k + A_k)/k, normalised
	m := len(best.layers)
	u := make([]float64, m)
	total := 0.0
	for j, l := range best.layers {
		u[j] = (best.amp[2*j] + best.amp[2*j+1]) / float64(l)
		total += u[j]
	}
	if !(total > 0) {
		return decomposition{}, false
	}
	// variance of u_j and covariance between them, from the amplitudes'
	uc := make([][]float64, m)
	for a := range uc {
		uc[a] = make([]float64, m)
		for b := range uc[a] {
			s := 0.0
			for i := 0; i < 2; i++ {
				for j := 0; j < 2; j++ {
					s += best.cov[2*a+i][2*b+j]
				}
			}
			uc[a][b] = s / float64(best.layers[a]*best.layers[b])
		}
	}
	var d decomposition
	for j, l := range best.layers {
		f := u[j] / total
		if f < 0.02 && m > 1 {
			continue
		}
		// ∂f_j/∂u_i = (δij·total − u_j)/total²
		v := 0.0
		for a := 0; a < m; a++ {
			ga := -u[j] / (total * total)
			if a == j {
				ga += 1 / total
			}
			for b := 0; b < m; b++ {
				gb := -u[j] / (total * total)
				if b == j {
					gb += 1 / total
				}
				v += ga * gb * uc[a][b]
			}
		}
		d.cov = append(d.cov, Coverage{Layers: l, Fraction: f, Err: math.Sqrt(math.Max(v, 0))})
	}
	// renormalise after dropping traces
	s := 0.0
	for _, c := range d.cov {
		s += c.Fraction
	}
	for i := range d.cov {
		d.cov[i].Fraction /= s
	}
	return d, len(d.cov) > 0
}

// maxSub is the most columns one subset least squares has: the baseline's
// two and four band columns.
const maxSub = 6

// nnls solves the least squares of the baseline columns (0, 1, free) and
// the peak columns (non-negative) from the Gram matrix g, Xᵀy and yᵀy, by
// trying every subset of the peak columns (at most four here): the best
// solution whose amplitudes are all positive. It returns the amplitudes of
// peak in order (0 for a column left out), their (XᵀX)⁻¹ block (times s²
// it is their covariance), and the residual sum of squares.
func nnls(g *[nCols][nCols]float64, xy *[nCols]float64, yy float64, peak []int) (amp []float64, cov [][]float64, ssr float64, ok bool) {
	ssr = math.Inf(1)
	np := len(peak)
	var bestCols [maxSub]int
	var bestBeta [maxSub]float64
	var bestInv [maxSub][maxSub]float64
	bestK := 0
	for set := 1; set < 1<<np; set++ {
		var cols [maxSub]int
		cols[0], cols[1] = 0, 1
		k := 2
		for j := 0; j < np; j++ {
			if set&(1<<j) != 0 {
				cols[k] = peak[j]
				k++
			}
		}
		var a [maxSub][maxSub]float64
		var b [maxSub]float64
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				a[i][j] = g[cols[i]][cols[j]]
			}
			b[i] = xy[cols[i]]
		}
		inv, err := invertSmall(&a, k)
		if err != nil {
			continue
		}
		var beta [maxSub]float64
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				beta[i] += inv[i][j] * b[j]
			}
		}
		feasible := true
		for i := 2; i < k; i++ {
			if !(beta[i] > 0) {
				feasible = false
			}
		}
		if !feasible {
			continue
		}
		// SSR = yᵀy − βᵀXᵀy (at the least-squares solution)
		s := yy
		for i := 0; i < k; i++ {
			s -= beta[i] * b[i]
		}
		s = math.Max(s, 0)
		if s < ssr {
			ssr, ok = s, true
			bestCols, bestBeta, bestInv, bestK = cols, beta, inv, k
		}
	}
	if !ok {
		return nil, nil, ssr, false
	}
	amp = make([]float64, np)
	cov = make([][]float64, np)
	pos := func(c int) int {
		for i := 2; i < bestK; i++ {
			if bestCols[i] == c {
				return i
			}
		}
		return -1
	}
	for j1 := 0; j1 < np; j1++ {
		cov[j1] = make([]float64, np)
		i1 := pos(peak[j1])
		if i1 < 0 {
			continue
		}
		amp[j1] = bestBeta[i1]
		for j2 := 0; j2 < np; j2++ {
			if i2 := pos(peak[j2]); i2 >= 0 {
				cov[j1][j2] = bestInv[i1][i2]
			}
		}
	}
	return amp, cov, ssr, true
}

// invertSmall inverts the leading n×n block of a symmetric matrix by
// Gauss–Jordan elimination with partial pivoting.
func invertSmall(a *[maxSub][maxSub]float64, n int) ([maxSub][maxSub]float64, error) {
	var m [maxSub][2 * maxSub]float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			m[i][j] = a[i][j]
		}
		m[i][n+i] = 1
	}
	var inv [maxSub][maxSub]float64
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if math.Abs(m[p][c]) < 1e-12*math.Max(1, math.Abs(a[c][c])) {
			return inv, errSingular
		}
		m[c], m[p] = m[p], m[c]
		pv := m[c][c]
		for k := 0; k < 2*n; k++ {
			m[c][k] /= pv
		}
		for r := 0; r < n; r++ {
			if r == c || m[r][c] == 0 {
				continue
			}
			f := m[r][c]
			for k := 0; k < 2*n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			inv[i][j] = m[i][n+j]
		}
	}
	return inv, nil
}

func lorentz(x, x0, g float64) float64 {
	d := (x - x0) / g
	return 1 / (1 + d*d)
}
