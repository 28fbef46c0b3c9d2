package agent

import (
	"math"
)

// round1 rounds v to one decimal.
func round1(v float64) float64 { return math.Round(v*10) / 10 }
