package rigbuild

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"hcp-edge/configs"
	"hcp-edge/drivers/profile"
)

// Profiles are instrument profiles by ID.
type Profiles map[string]*profile.Profile

// LoadProfiles reads the shipped profiles (configs/profiles) and, when dir
// is set, the lab's own *.yaml there (a profile of the same ID replaces the
// shipped one). Every problem of every file is returned at once, each a
// *profile.Problem (FILE:LINE: key: message).
func LoadProfiles(dir string) (Profiles, error) {
	out := Profiles{}
	var errs []error
	shipped := configs.Profiles()
	for _, name := range shipped.Names() {
		p, err := profile.Parse("configs/"+name, shipped[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[p.ID] = p
	}
	if dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			errs = append(errs, err)
		}
		sort.Strings(files)
		for _, f := range files {
			st, err := os.Stat(f)
			if err == nil && st.Size() > profile.MaxSize {
				errs = append(errs, &profile.Problem{File: f, Line: 1, Key: "(file)",
					Message: fmt.Sprintf("%d bytes: a profile is at most %d (1 MiB)", st.Size(), profile.MaxSize)})
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p, err := profile.Parse(f, b)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[p.ID] = p
		}
	}
	return out, errors.Join(errs...)
}

// IDs lists the profiles' IDs, sorted.
func (ps Profiles) IDs() []string {
	out := make([]string, 0, len(ps))
	for id := range ps {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the profile of a device of kind want, or an error naming
// the known ones.
func (ps Profiles) Lookup(id string, want profile.Kind) (*profile.Profile, error) {
	if id == "" {
		return nil, fmt.Errorf("no profile named (known: %s)", strings.Join(ps.IDs(), ", "))
	}
	p, ok := ps[id]
	if !ok {
		return nil, fmt.Errorf("no profile %q (known: %s)", id, strings.Join(ps.IDs(), ", "))
	}
	if p.Kind != want {
		return nil, fmt.Errorf("profile %q is a %s, not a %s", id, p.Kind, want)
	}
	return p, nil
}

// Serial returns the profile of a serial instrument: of kind want and
// family fam.
func (ps Profiles) Serial(id string, want profile.Kind, fam profile.Family) (*profile.Profile, error) {
	p, err := ps.Lookup(id, want)
	if err == nil && p.Family != fam {
		err = fmt.Errorf("profile %q is of the %s family; this instrument is driven by the %s family's driver", id, p.Family, fam)
	}
	return p, err
}
