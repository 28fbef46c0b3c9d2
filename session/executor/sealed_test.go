package executor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"hcp-edge/session/atrest"
)

// TestSealedArtifacts: with Env.AtRest the artifact file is sealed for its
// session and name, and the Artifact describes the plaintext; without it
// the file is the plaintext, as before.
func TestSealedArtifacts(t *testing.T) {
	k, err := atrest.ParseKey([]byte("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("elapsed_seconds,stage,temperature_c,pressure_pa\n0,preflight,24.8,101325\n")
	sum := sha256.Sum256(data)
	for _, tc := range []struct {
		name string
		key  *atrest.Key
	}{{"T1/T2: plain", nil}, {"T3/T4: sealed", k}} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{ArtifactDir: filepath.Join(t.TempDir(), "artifacts", "s1"), SessionID: "s1", AtRest: tc.key}
			a, err := writeArtifact(env, "growth_log", "growth_log.csv", "text/csv", data)
			if err != nil {
				t.Fatal(err)
			}
			if a.SizeBytes != int64(len(data)) || a.Checksum != "sha256:"+hex.EncodeToString(sum[:]) ||
				a.URI != "hcp://s1/artifacts/growth_log.csv" || a.Sealed != (tc.key != nil) {
				t.Fatalf("artifact %+v", a)
			}
			disk, err := os.ReadFile(a.Path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.key == nil {
				if !bytes.Equal(disk, data) {
					t.Fatal("plain artifact changed")
				}
				return
			}
			if bytes.Contains(disk, []byte("preflight")) || !atrest.IsSealed(disk) {
				t.Fatal("sealed artifact holds the plaintext")
			}
			got, err := k.Open(disk, atrest.ArtifactBinding("s1", "growth_log.csv"))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("open: %v", err)
			}
			if _, err := k.Open(disk, atrest.ArtifactBinding("s1", "raman_raw.json")); !errors.Is(err, atrest.ErrTampered) {
				t.Fatalf("opened as another artifact: %v", err)
			}
		})
	}
	// Sealing needs the session id the binding names.
	if _, err := writeArtifact(&Env{ArtifactDir: t.TempDir(), AtRest: k}, "x", "x.csv", "text/csv", data); !errors.Is(err, atrest.ErrBinding) {
		t.Fatalf("no session id: %v", err)
	}
}

// TestSealedPartial: the partial growth log of a failed T3 run is sealed too.
func TestSealedPartial(t *testing.T) {
	k, err := atrest.ParseKey([]byte("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
	if err != nil {
		t.Fatal(err)
	}
	cvd := shippedExecutor(t, CVDName)
	rec, err := cvd.Plan(Task{SessionID: "s3", Inputs: []byte(`{"target_material":"MoS2","substrate":"SiO2/Si"}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, arts := rec.Partial(&Env{ArtifactDir: t.TempDir(), SessionID: "s3", AtRest: k})
	if len(arts) != 1 || !arts[0].Sealed {
		t.Fatalf("partial artifacts %+v", arts)
	}
	disk, _ := os.ReadFile(arts[0].Path)
	got, err := k.Open(disk, atrest.ArtifactBinding("s3", filepath.Base(arts[0].Path)))
	if err != nil || int64(len(got)) != arts[0].SizeBytes || !bytes.HasPrefix(got, []byte("elapsed_seconds,")) {
		t.Fatalf("open: %q %v", got, err)
	}
}
