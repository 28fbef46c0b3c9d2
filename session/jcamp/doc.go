// Package jcamp writes spectra as JCAMP-DX, the IUPAC exchange format that
// spectroscopists' software reads (JCAMP-DX 4.24, McDonald and Wilks, Appl.
// Spectrosc. 42 (1988) 151; the 5.01 labels of Lampen et al., Pure Appl.
// Chem. 71 (1999) 1549). It is pure: no I/O but the io.Writer it is handed,
// no clock, no goroutines.
//
// # Concepts
//
// Encode renders one Spectrum (Raman shift in cm⁻¹, ascending, and
// intensity in detector counts) with its Meta (title, origin, owner, the
// instrument, the sample, the acquisition time and integration) as one
// JCAMP-DX block:
//
//	##TITLE=, ##JCAMP-DX=5.01, ##DATA TYPE=RAMAN SPECTRUM,
//	##ORIGIN=, ##OWNER=, ##LONGDATE=, ##SPECTROMETER/DATA SYSTEM=,
//	##SAMPLE DESCRIPTION=, ##$... acquisition parameters,
//	##XUNITS=1/CM, ##YUNITS=COUNTS, ##XFACTOR=, ##YFACTOR=,
//	##FIRSTX=, ##LASTX=, ##DELTAX=, ##FIRSTY=, ##MINX= .. ##MAXY=,
//	##NPOINTS=, ##XYDATA=(X++(Y..Y)) or ##XYPOINTS=(XY..XY), ##END=
//
// An evenly spaced x axis (every shift within half its last written digit
// of FIRSTX + i·DELTAX) is written as XYDATA=(X++(Y..Y)) in AFFN (free
// format decimals, at most 80 characters a line); any other as
// XYPOINTS=(XY..XY), one pair a line. The y values are written as integers
// scaled by YFACTOR, the smallest power of ten (1 down to 10⁻⁶) at which
// every count is whole, so a reader gets back exactly what was measured to
// the precision YFACTOR declares; x values are written with the fewest
// decimals (0..6) that hold every shift. A user label (##$NAME=) carries
// each acquisition parameter the standard has no label for.
//
// # Caveats
//
// Data lines are at most 80 characters; a label line is as long as its
// value (a long title is not wrapped: readers take a label's value to the
// end of its line).
//
// Only the uncompressed AFFN form is written (no SQZ/DIF/DUP): a 1,000-point
// spectrum is about 8 KB, and every reader reads AFFN. Text fields are
// written on one line each; a line break or a "##" inside a value is
// replaced by a space, since it would start a new label.
package jcamp
