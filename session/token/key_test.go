package token

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"testing"
)

// TestMarshalPKCS8AsX509: the key file's DER is x509.MarshalPKCS8PrivateKey's,
// and x509 parses it back to the same key.
func TestMarshalPKCS8AsX509(t *testing.T) {
	for range 20 {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		want, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		got := marshalPKCS8(priv)
		if !bytes.Equal(got, want) {
			t.Fatalf("marshalPKCS8 = %x, x509 = %x", got, want)
		}
		k, err := x509.ParsePKCS8PrivateKey(got)
		if err != nil {
			t.Fatal(err)
		}
		if !priv.Equal(k) {
			t.Fatal("parsed key differs")
		}
	}
}
