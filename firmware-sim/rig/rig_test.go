package rig

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
