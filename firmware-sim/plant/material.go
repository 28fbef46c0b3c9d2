package plant

import (
	"fmt"
	"math"
	"strings"
)

// Material is a transition-metal disulfide the rig grows.
type Material string

// The materials the plant grows.
const (
	MoS2 Material = "MoS2"
	WS2  Material = "WS2"
	// GrapheneMaterial grows on the graphene rig's copper foil (graphene.go).
	GrapheneMaterial Material = "graphene"
)

// Precursor is the metal oxide in the precursor boat; H2S sulfurizes what it
// gives off into the material of Precursor.Material.
type Precursor string

// The precursors the plant knows.
const (
	MoO3 Precursor = "MoO3" // grows MoS2; the default
	WO3  Precursor = "WO3"  // grows WS2
)

// Precursors lists every precursor the plant knows, the default first.
var Precursors = []Precursor{MoO3, WO3}

// ParsePrecursor returns the precursor named s ("MoO3" or "WO3", any case,
// surrounding space ignored), or an error wrapping ErrUnknownPrecursor.
func ParsePrecursor(s string) (Precursor, error) {
	t := strings.TrimSpace(s)
	for _, p := range Precursors {
		if strings.EqualFold(t, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %q (want MoO3 or WO3)", ErrUnknownPrecursor, s)
}

// Material is what H2S grows from the precursor: MoS2 from MoO3, WS2 from
// WO3; an error wrapping ErrUnknownPrecursor for anything else.
func (p Precursor) Material() (Material, error) {
	switch p {
	case MoO3:
		return MoS2, nil
	case WO3:
		return WS2, nil
	}
	return "", fmt.Errorf("%w: %q (want MoO3 or WO3)", ErrUnknownPrecursor, string(p))
}

// Film is what has grown on the sample, in layers per material (0 = none;
// fractional values mean partial coverage of the next layer). A run normally
// grows one material; if the precursor was changed while growing, both show.
type Film struct {
	MoS2 float64 `json:"MoS2"`
	WS2  float64 `json:"WS2"`
	// Graphene is the fraction of the copper foil covered by graphene (one
	// layer or more), 0..1; GrapheneBilayer the fraction covered by a second
	// layer (bilayer islands), never above Graphene. Graphene rig only.
	Graphene        float64 `json:"graphene,omitempty"`
	GrapheneBilayer float64 `json:"graphene_bilayer,omitempty"`
	// GrapheneDomainUM is the graphene's coverage-weighted domain size (µm)
	// and GrapheneDG its D/G band intensity ratio (graphene.go).
	GrapheneDomainUM float64 `json:"graphene_domain_um,omitempty"`
	GrapheneDG       float64 `json:"graphene_d_g,omitempty"`
}

// Layers is the film's total thickness in layers, every material counted
// (graphene's as the area-weighted mean: coverage plus bilayer coverage).
func (f Film) Layers() float64 { return f.MoS2 + f.WS2 + f.Graphene + f.GrapheneBilayer }

// Material names what has grown: "" on a bare substrate, "MoS2" or "WS2" when
// only one material has grown, "MoS2+WS2" when both have (a stack, not a
// sample of either).
func (f Film) Material() string {
	if f.Graphene > 0 {
		return string(GrapheneMaterial)
	}
	switch {
	case f.MoS2 > 0 && f.WS2 > 0:
		return string(MoS2) + "+" + string(WS2)
	case f.MoS2 > 0:
		return string(MoS2)
	case f.WS2 > 0:
		return string(WS2)
	}
	return ""
}

// BulkLayers is the layer count from which a film counts as bulk: Truth
// reports thicker areas as this many layers.
const BulkLayers = 4

// Truth is what a film is, as the analysis of its spectrum should find it.
type Truth struct {
	// Material is Film.Material: "", "MoS2", "WS2" or "MoS2+WS2".
	Material string `json:"material"`
	// Layers is the film's mean thickness in layers (Film.Layers).
	Layers float64 `json:"layers"`
	// Coverage is the fraction of the sample with each whole layer count
	// (0 = bare, BulkLayers = bulk): a film of n+f layers (0 <= f < 1)
	// covers 1−f of the sample with n layers and f with n+1. It sums to 1.
	Coverage map[int]float64 `json:"coverage"`
	// LayerCount is the layer count the film mostly has where it is covered
	// (1..BulkLayers); 0 on a bare sample. On a tie the thinner wins.
	LayerCount int `json:"layer_count"`
	// DG and DomainUM are a graphene film's D/G intensity ratio and domain
	// size (µm); absent for other films.
	DG       float64 `json:"d_g,omitempty"`
	DomainUM float64 `json:"domain_um,omitempty"`
}

// Truth returns what the film is: material, layers and coverage per layer
// count.
func (f Film) Truth() Truth {
	if f.Graphene > 0 || f.GrapheneBilayer > 0 {
		return f.grapheneTruth()
	}
	l := f.Layers()
	if !(l > 0) {
		return Truth{Coverage: map[int]float64{0: 1}}
	}
	t := Truth{Material: f.Material(), Layers: l, Coverage: map[int]float64{}}
	n := math.Floor(l)
	fr := l - n
	switch {
	case n >= BulkLayers:
		t.Coverage[BulkLayers] = 1
		t.LayerCount = BulkLayers
		return t
	case fr == 0:
		t.Coverage[int(n)] = 1
		t.LayerCount = int(n)
		return t
	}
	lo, hi := int(n), int(n)+1
	t.Coverage[lo], t.Coverage[hi] = 1-fr, fr
	t.LayerCount = hi
	if lo > 0 && 1-fr >= fr {
		t.LayerCount = lo
	}
	return t
}

// add grows n layers of m.
func (f *Film) add(m Material, n float64) {
	switch m {
	case MoS2:
		f.MoS2 += n
	case WS2:
		f.WS2 += n
	}
}

// Precursor is what the precursor boat holds now.
func (p *Plant) Precursor() Precursor {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.precursor
}

// SetPrecursor puts pr in the precursor boat (MoO3 or WO3): what grows from
// now on is its material; what has grown stays. It fails with an error
// wrapping ErrUnknownPrecursor, and changes nothing, for anything else. The
// boat is loaded by hand, not through the firmware: the write log does not
// record it.
func (p *Plant) SetPrecursor(pr Precursor) error {
	if _, err := pr.Material(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		p.catchUpLocked() // what grew until now grew from the old precursor
	}
	p.precursor = pr
	return nil
}

// Film is what has grown on the sample so far, per material.
func (p *Plant) Film() Film {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.film
}

// Amounts is the film per constituent, in the unit of Layers: "MoS2" and
// "WS2" (layers) on the sulfurization rig's sample; "graphene" (the foil's
// covered fraction) and "graphene_bilayer" (its bilayer fraction) on the
// graphene rig's foil. Empty on a bare sample.
func (f Film) Amounts() map[string]float64 {
	switch {
	case !(f.Layers() > 0):
		return nil
	case f.Graphene > 0 || f.GrapheneBilayer > 0:
		return map[string]float64{string(GrapheneMaterial): f.Graphene, string(GrapheneMaterial) + "_bilayer": f.GrapheneBilayer}
	}
	return map[string]float64{string(MoS2): f.MoS2, string(WS2): f.WS2}
}
