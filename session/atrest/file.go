package atrest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile seals plaintext under k for b and writes it to path with mode
// perm: to a temporary file in the same directory, synced, then renamed
// over path, so that path holds the old content or the whole new one.
func (k *Key) WriteFile(path string, plaintext []byte, b Binding, perm fs.FileMode) error {
	blob, err := k.Seal(plaintext, b)
	if err != nil {
		return err
	}
	return writeAtomic(path, blob, perm)
}

// ReadFile reads the sealed file at path and opens it with k for b (the
// errors of Open, or the file system's, wrapped with the path).
func (k *Key) ReadFile(path string, b Binding) ([]byte, error) {
	blob, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("atrest: %w", err)
	}
	plain, err := k.Open(blob, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return plain, nil
}

func writeAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("atrest: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("atrest: write %s: %w", path, err)
	}
	return nil
}
