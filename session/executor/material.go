package executor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"hcp-edge/session/analysis"
	"hcp-edge/session/recipe"
)

// CodeMaterialMismatch is the code of the warning event (audited) of a
// session whose spectrum shows another material than the recipe grows, a
// mixture, or nothing (docs/PROTOCOL-NOTES.md, "Material").
const CodeMaterialMismatch = "material_mismatch"

// MaterialFinding is raman_analysis.material in the outputs: what the
// spectrum shows (the analysis tool's identification, from the bands'
// positions and their uncertainties against each material's published
// ranges) against what the recipe grows (its analyse phase's material).
type MaterialFinding struct {
	// Name is one of the analysis's materials (analysis.Materials),
	// "mixture" or "none".
	Name       string  `json:"name"`
	Confidence float64 `json:"confidence"`
	// Fractions: a mixture's share of the band signal per material.
	Fractions map[string]float64 `json:"fractions,omitempty"`
	// Expected is the recipe's material ("auto": any one material).
	Expected      string `json:"expected"`
	MatchesRecipe bool   `json:"matches_recipe"`
	Reason        string `json:"reason,omitempty"`
}

// findingOf compares id with the recipe's expected material: it matches
// when id names that one material (for "auto", any one material).
func findingOf(expected string, id analysis.Identification) MaterialFinding {
	f := MaterialFinding{Name: id.Name, Confidence: id.Confidence, Fractions: id.Fractions, Expected: expected, Reason: id.Reason}
	if m, err := analysis.ParseMaterial(expected); err == nil {
		f.Expected = string(m)
	}
	f.MatchesRecipe = id.Single() && (f.Expected == string(analysis.Auto) || sameMaterial(id.Name, f.Expected))
	return f
}

// sameMaterial reports whether a and b name one material (in any case).
func sameMaterial(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// message is the warning's text of a finding that does not match.
func (f MaterialFinding) message() string {
	switch f.Name {
	case analysis.NameNone:
		return fmt.Sprintf("the recipe grows %s but the spectrum shows no material's bands (confidence %.2f): %s", f.Expected, f.Confidence, f.Reason)
	case analysis.NameMixture:
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(f.Fractions)) {
			parts = append(parts, fmt.Sprintf("%s %.0f %%", m, 100*f.Fractions[m]))
		}
		return fmt.Sprintf("the recipe grows %s but the spectrum shows a mixture (%s of the band signal; confidence %.2f)",
			f.Expected, strings.Join(parts, ", "), f.Confidence)
	}
	return fmt.Sprintf("the recipe grows %s but the spectrum shows %s (confidence %.2f): a wrong precursor in the boat?", f.Expected, f.Name, f.Confidence)
}

// details are the warning's details: expected, found, confidence, fractions.
func (f MaterialFinding) details() map[string]any {
	d := map[string]any{"expected": f.Expected, "found": f.Name, "confidence": f.Confidence}
	if len(f.Fractions) > 0 {
		d["fractions"] = f.Fractions
	}
	return d
}

// identification is p's identification of the spectrum, or the local one
// when the tool's handler gave none.
func (r *recipeRun) identification(p *Provenance) analysis.Identification {
	if p != nil && p.identified != nil {
		return *p.identified
	}
	if r.st.Spectrum != nil {
		if id, err := analysis.IdentifyFor(*r.st.Spectrum); err == nil {
			return id
		}
	}
	return analysis.Identification{Name: analysis.NameNone, Confidence: analysis.NoneConfidence, Reason: "no spectrum identified"}
}

// material is the run's finding: the state's, or, for a state of an
// earlier version, the spectrum identified now.
func (r *recipeRun) material() MaterialFinding {
	if f := r.st.Material; f != nil {
		return *f
	}
	return findingOf(r.expectedMaterial(), r.identification(nil))
}

// expectedMaterial is the material the plan's (last) analyse phase grows,
// "" when it analyses none.
func (r *recipeRun) expectedMaterial() string {
	m := ""
	for _, ph := range r.st.Plan.Phases {
		if ph.Kind == recipe.KindAnalyse && ph.Analyse != nil {
			m = ph.Analyse.Material
		}
	}
	return m
}

// ExpectedMaterial is the material the planned run grows: its analyse
// phase's material ("" when it analyses none). The preview loads the
// simulated boat with its precursor.
func (r *recipeRun) ExpectedMaterial() string { return r.expectedMaterial() }
