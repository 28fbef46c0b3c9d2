package rig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hcp-edge/hcp-edge/firmware-sim/plant"
)

func TestStartClose(t *testing.T) {
	dir := t.TempDir()
	r, err := Start(context.Background(), Opts{Dir: dir, ModbusAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{RTUName, ControlName} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{RTUName, ControlName} {
		if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", n, err)
		}
	}
}

func TestStartWithPrecursor(t *testing.T) {
	r, err := Start(context.Background(), Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", Precursor: plant.WO3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if got := r.Plant().Precursor(); got != plant.WO3 {
		t.Fatalf("precursor %q", got)
	}
	if _, err := Start(context.Background(), Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", Precursor: "V2O5"}); !errors.Is(err, plant.ErrUnknownPrecursor) {
		t.Fatalf("V2O5: %v", err)
	}
}
