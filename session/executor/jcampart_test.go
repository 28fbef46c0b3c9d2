package executor

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// checkJCAMP: the run's JCAMP-DX artifact describes the spectrum of its
// outputs (the peer test reads it with jcampconverter, point by point).
func checkJCAMP(t *testing.T, res *Result) {
	t.Helper()
	for _, a := range res.Artifacts {
		if a.Name != jcampName {
			continue
		}
		data, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		sd, _ := res.Outputs["spectrum_data"].(map[string]any)
		shift, _ := sd["raman_shift"].([]float64)
		text := string(data)
		for _, want := range []string{"##JCAMP-DX=5.01\r\n", "##DATA TYPE=RAMAN SPECTRUM\r\n", "##XUNITS=1/CM\r\n", "##YUNITS=COUNTS\r\n",
			"##NPOINTS=" + strconv.Itoa(len(shift)) + "\r\n", "##$INTEGRATION TIME MS=", "##LONGDATE=", "##END=\r\n"} {
			if len(shift) == 0 || !strings.Contains(text, want) {
				t.Fatalf("%s lacks %q (%d points):\n%.600s", a.Name, want, len(shift), text)
			}
		}
		if a.Type != "chemical/x-jcamp-dx" {
			t.Fatalf("type %q", a.Type)
		}
		return
	}
	t.Fatalf("no %s artifact in %+v", jcampName, res.Artifacts)
}
