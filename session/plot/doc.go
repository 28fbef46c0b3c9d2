// Package plot draws the agent's small line charts as plain SVG: the
// Raman spectrum with its fitted peaks, a run's process profile, a leak
// check's pressure rise. It is pure: no I/O, no clock, no goroutines.
//
// # Concepts
//
// A Figure is a stack of Panels that share one x axis. Each Panel has its
// own y axis (linear, or logarithmic for pressures), its Series (polylines,
// optionally with point markers), and its Rules (horizontal lines: envelope
// limits, thresholds). Spans shade x ranges across every panel (a recipe's
// steps); Notes are lines of text under the title (a verdict). SVG renders
// the whole figure as one standalone document.
//
// The output is meant to be read by people and checked by programs: every
// series is a <path> (or a <g> of markers) with class "series" and a
// data-series attribute holding its name, every rule a <line> with class
// "rule" and data-rule, every span a <rect> with class "span" and data-span,
// every note a <text> with class "note". There are no scripts, no external
// references and no fonts to fetch: the file opens in any browser or
// vector editor as it is.
//
// # Why our own
//
// The charts are few and simple (lines, markers, shaded ranges, labelled
// axes). An SVG charting library for Go (go-chart, gonum/plot) would add a
// dependency tree, fonts or raster back-ends, and megabytes to a binary that
// must stay small on a Raspberry Pi; the part we need is a few hundred
// lines of text output that tests can parse with encoding/xml.
//
// # Caveats
//
// Non-finite values break a line (a gap), they are never drawn. On a
// logarithmic axis values at or below zero are gaps too. Axis ranges come
// from the data and the rules; a series with one point is drawn as a marker.
package plot
