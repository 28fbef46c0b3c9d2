// Package analysis reads a Raman spectrum of MoS2: it removes the baseline,
// fits the E2g and A1g peaks with Lorentzians, and maps the A1g−E2g distance
// to a layer count with a confidence. It is pure: no I/O, no clock, no
// goroutines.
//
// # Method
//
// Analyze keeps the finite points of the spectrum, sorts them by shift, and
// works in the window 350–440 cm⁻¹. A first baseline is the straight line
// through the medians of the window's two edge regions (350–365 and
// 425–440 cm⁻¹), which hold no MoS2 band. The noise is estimated robustly
// (median absolute second difference). A peak is detected in the E2g region
// (375–392 cm⁻¹) and in the A1g region (398–416 cm⁻¹) when the smoothed
// baseline-corrected maximum stands at least DetectSNR noise levels above
// the baseline; when either is missing the result says "no MoS2 found"
// (Found false) rather than failing.
//
// The model y = b0 + b1·(x−xc) + Σ A/(1+((x−x0)/γ)²) over the window (two
// Lorentzians on a linear baseline, eight parameters) is fitted by
// Levenberg–Marquardt with an analytic Jacobian (written here; no external
// optimiser). The parameter uncertainties are the square roots of the
// diagonal of s²(JᵀJ)⁻¹ with s² = SSR/(n−p); the distance's uncertainty uses
// the covariance of the two positions.
//
// # Layer count
//
// The mapping is the one of Lee et al. 2010, the seed task's reference
// (doi:10.1021/nl903868w as cited by the seed; see Caveats): the E2g mode
// softens and the A1g mode stiffens with the number of layers, so their
// distance grows from about 18.5–19.5 cm⁻¹ for a monolayer to 21–22 for a
// bilayer, about 23 for three layers and about 25 for bulk. Bands (cm⁻¹):
//
//	layers  band           core (confidence 1)
//	1       [17.0, 20.2)   [18.5, 19.5]
//	2       [20.2, 22.4)   [21.0, 22.0]
//	3       [22.4, 24.0)   [22.7, 23.3]
//	bulk    [24.0, 26.5]   [24.5, 25.5]   (LayerCount 4, Bulk true: "four or more")
//
// Outside every band the peaks are reported but LayerCount is 0 and the
// confidence 0.
//
// # Confidence
//
// Confidence = fit × position × certainty, each in [0,1]: fit from the fit's
// R² over the window (1 − 5(1−R²), clamped) and the weaker peak's
// signal-to-noise ratio (1 − exp(−SNR/8)); position is 1 inside the band's
// core and falls linearly to 0.5 at the band's edge (a distance on the border
// of two classes is a coin toss); certainty is the probability that the
// distance lies inside its band given its fitted uncertainty (normal).
//
// # Caveats
//
// doi:10.1021/nl903868w, which the seed cites as Lee et al. 2010, resolves to
// our knowledge to Splendiani et al., "Emerging photoluminescence in
// monolayer MoS2" (Nano Lett. 2010); the Raman distance-per-layer data of
// Lee et al. ("Anomalous lattice vibrations of single- and few-layer MoS2")
// are in ACS Nano 4, 2695 (2010), doi:10.1021/nn1003937. The bands above
// follow the values of the latter (532 nm excitation); other excitation
// wavelengths, strain and doping shift them by a few tenths of a cm⁻¹.
//
// A fractional coverage (a monolayer with bilayer islands) gives a distance
// between two bands; it is classified by the nearer band with a reduced
// confidence, not reported as a fraction.
package analysis
