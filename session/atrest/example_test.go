package atrest_test

import (
	"errors"
	"fmt"

	"hcp-edge/session/atrest"
)

func Example() {
	// In the agent the key comes from agent.at_rest_key_file (LoadKey).
	k, err := atrest.ParseKey([]byte("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
	if err != nil {
		panic(err)
	}
	b := atrest.Binding{SessionID: "0b6f0c1e", Purpose: atrest.PurposeArtifact, Name: "growth_log.csv"}
	blob, err := k.Seal([]byte("elapsed_seconds,stage\n0,preflight\n"), b)
	if err != nil {
		panic(err)
	}
	plain, err := k.Open(blob, b)
	fmt.Printf("%q %v\n", plain, err)

	// The same blob presented as another session's artifact does not open.
	_, err = k.Open(blob, atrest.Binding{SessionID: "another", Purpose: atrest.PurposeArtifact, Name: "growth_log.csv"})
	fmt.Println(errors.Is(err, atrest.ErrTampered))
	// Output:
	// "elapsed_seconds,stage\n0,preflight\n" <nil>
	// true
}
